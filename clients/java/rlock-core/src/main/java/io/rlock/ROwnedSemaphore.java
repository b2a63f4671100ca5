package io.rlock;

import io.rlock.internal.*;

import java.util.concurrent.TimeUnit;

/**
 * Owned permits ({@code RSEM.*}, {@link RLockClient#getOwnedSemaphore}, not Redisson's): acquired
 * permits belong to the calling thread ({@code <client id>:<thread id>}) and come back when this
 * client's connection dies; waiting threads queue FIFO (a request for 3 is not passed by later requests for 1).
 */
public interface ROwnedSemaphore {
    String getName();

    /** Sets the permits if the semaphore does not exist yet; true when it set them. */
    boolean trySetPermits(int permits);

    /** Adds permits (negative: removes), serving waiters. */
    void addPermits(int permits);

    int availablePermits();

    void acquire() throws InterruptedException;

    void acquire(int permits) throws InterruptedException;

    boolean tryAcquire();

    boolean tryAcquire(int permits);

    boolean tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException;

    boolean tryAcquire(int permits, long waitTime, TimeUnit unit) throws InterruptedException;

    void release();

    /**
     * Gives back permits the calling thread holds.
     *
     * @throws IllegalMonitorStateException when it holds none
     * @throws RLockException when it holds fewer than {@code permits} (nothing is released)
     */
    void release(int permits);

    /**
     * The fencing token of the current thread's permits (larger than every token issued before
     * it for this semaphore), not in Redisson's interface.
     *
     * @throws IllegalMonitorStateException when the current thread holds no permits
     * @throws LockLostException when its permits were lost
     */
    long getToken();
}
