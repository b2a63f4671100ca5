package io.rlock.fleet;

/**
 * One side's way into a shared primitive (a lock, a fair lock, one side of a read-write lock, a
 * permit of a semaphore), entered and left by one thread: Redisson's and rlock's locks are owned
 * by the thread.
 */
interface Gate {
    /** Enters within {@code waitMs} (0: only if free now); whether it entered. */
    boolean enter(long waitMs) throws InterruptedException;

    void leave();
}
