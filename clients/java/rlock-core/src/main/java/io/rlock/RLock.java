package io.rlock;

import io.rlock.internal.*;

import java.util.concurrent.CompletableFuture;
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

    /**
     * Runs one write command ({@code RLOCK.GUARD}) only while the calling thread still holds this
     * lock with its current token, atomically: e.g. {@code lock.guard("SET", "balance", "10")}.
     * The command must be a write that never blocks, allowed to this client's user; in Redis
     * Cluster its keys must share the lock key's slot (use a hash tag).
     *
     * @return the inner command's reply as the connection reads it ({@code String} for simple
     *         strings, {@code byte[]} for bulk strings, {@code Long}, {@code List}, null)
     * @throws LockLostException when the server says the thread no longer holds it with that
     *         token ({@code NOTOWNER}): nothing ran
     * @throws IllegalMonitorStateException when this client knows of no holding of the thread
     * @throws RLockException when the server refuses the command (not a write, {@code NOPERM},
     *         {@code CROSSSLOT}, {@code OOM}, ...)
     * @throws UnsupportedOperationException on a read-write lock's side
     */
    Object guard(String... command);

    /**
     * This lock with {@code LOCKDELAY} on its acquires: when a holding taken through the returned
     * handle ends other than by its owner's release (lease end, lost watchdog connection,
     * {@code MAXHOLD}), nobody gets the lock for {@code delay} (waiters keep their places).
     * Rounded up to whole ms.
     *
     * @throws UnsupportedOperationException on a read-write lock's side (the server has no
     *         lock-delay for it)
     */
    RLock withLockDelay(long delay, TimeUnit unit);

    /**
     * Tells {@code listener} of the lock's key's events (Redisson's {@code addListener}): an
     * {@link ExpiredObjectListener} when its lease ends, a {@link DeletedObjectListener} when its
     * last release deletes it. The server must publish them ({@code notify-keyspace-events} with
     * {@code E} and {@code x}, {@code g}); {@link #unlock()} returns once the listeners were told
     * of the {@code del} it caused. Told on a thread of the client's. Returns the id for
     * {@link #removeListener(int)}.
     *
     * @throws IllegalStateException when {@code CONFIG GET notify-keyspace-events} shows the
     *         server would not publish them (not checked when the user may not run it)
     * @throws UnsupportedOperationException on a multi-lock, as Redisson's
     */
    int addListener(ObjectListener listener);

    void removeListener(int listenerId);

    // Redisson's async forms (RLockAsync): each acts for the calling thread (or {@code threadId}),
    // on one of the client's threads; the future fails as the blocking call would throw.

    CompletableFuture<Void> lockAsync();

    CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit);

    CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId);

    CompletableFuture<Boolean> tryLockAsync();

    CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit);

    CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit);

    CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId);

    CompletableFuture<Void> unlockAsync();

    CompletableFuture<Void> unlockAsync(long threadId);

    CompletableFuture<Boolean> forceUnlockAsync();

    CompletableFuture<Boolean> isLockedAsync();

    CompletableFuture<Long> remainTimeToLiveAsync();
}
