package rlock;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A lock shared through Redis, with Redisson's {@code RLock} methods. The owner of a holding is
 * the calling thread of this client ({@code <client id>:<thread id>}): a thread re-enters its
 * own holding, other threads and other clients are excluded.
 *
 * <p>Without a lease time the lock is held by the server's watchdog on this client's own
 * connection: it lasts until {@link #unlock()}, and ends within milliseconds when the JVM dies.
 * With a lease time it ends at the lease unless unlocked first. Waiting threads queue in the
 * server's FIFO queue and are parked until their grant; none of them holds a connection.
 */
public interface RLock extends Lock {
    /** The lock's key. */
    String getName();

    /** Waits (without a deadline, ignoring interrupts until it holds) and holds with the watchdog. */
    @Override
    void lock();

    /** As {@link #lock()}, holding for {@code leaseTime} (then it ends unless unlocked); -1: the watchdog. */
    void lock(long leaseTime, TimeUnit unit);

    @Override
    void lockInterruptibly() throws InterruptedException;

    /** As {@link #lockInterruptibly()}, holding for {@code leaseTime}; -1: the watchdog. */
    void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException;

    /** One attempt, no waiting; held with the watchdog when it succeeds. */
    @Override
    boolean tryLock();

    /** Waits at most {@code time} (0: one attempt); held with the watchdog. */
    @Override
    boolean tryLock(long time, TimeUnit unit) throws InterruptedException;

    /** Waits at most {@code waitTime} and holds for {@code leaseTime} (-1: the watchdog). */
    boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Gives back one hold of the calling thread.
     *
     * @throws IllegalMonitorStateException when the calling thread does not hold it (never
     *         did, or its holding ended: lease, loss of the watchdog connection, forceUnlock)
     */
    @Override
    void unlock();

    /** Not supported: a {@code Condition} would need the server to wait on it. */
    @Override
    default Condition newCondition() {
        throw new UnsupportedOperationException("rlock has no conditions");
    }

    /** Whether anyone holds it. */
    boolean isLocked();

    /** Whether the calling thread holds it (asks the server; false once the holding is lost). */
    boolean isHeldByCurrentThread();

    /** Whether the thread {@code threadId} of this client holds it. */
    boolean isHeldByThread(long threadId);

    /** The calling thread's hold count (0 when it does not hold it). */
    int getHoldCount();

    /** Removes the lock whoever holds it; true when something was held. */
    boolean forceUnlock();

    /** Milliseconds left of its lease: -1 without expiry, -2 when not held. */
    long remainTimeToLive();

    /**
     * The fencing token of the calling thread's holding: larger than every token issued before
     * for this key, the same for re-entries. Pass it to the resource you protect and have it
     * refuse lower ones.
     *
     * @throws IllegalMonitorStateException when the calling thread holds nothing here (as far
     *         as this client knows)
     */
    long getToken();
}
