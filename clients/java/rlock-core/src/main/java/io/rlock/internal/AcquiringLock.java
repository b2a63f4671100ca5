package io.rlock.internal;

import io.rlock.*;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The waiting methods of {@link RLock} ({@code lock}, {@code lockInterruptibly}, {@code tryLock},
 * {@code unlock}) and their async forms over one acquire and one release: what a single lock and
 * a {@link MultiLock} share. The async forms act for the calling thread (its thread id is the
 * owner, as in Redisson), on one of the client's threads.
 */
public abstract class AcquiringLock extends Handle implements RLock {
    public AcquiringLock(Engine engine, String name) {
        super(engine, name);
    }

    /**
     * Takes the lock for the thread {@code threadId}: true when held, false when not within the wait.
     *
     * @param leaseMs -1: the watchdog; else a plain lease
     * @param waitMs  -1: without a deadline; 0: one attempt; else at most that long
     */
    protected abstract boolean take(long threadId, long leaseMs, long waitMs, boolean interruptible) throws InterruptedException;

    /**
     * Gives back one hold of the thread {@code threadId}.
     *
     * @throws IllegalMonitorStateException when that thread does not hold it
     */
    protected abstract void release(long threadId);

    @Override
    public int addListener(ObjectListener listener) {
        return engine.objectEvents().add(name, listener);
    }

    @Override
    public void removeListener(int listenerId) {
        engine.objectEvents().remove(listenerId);
    }

    private static long current() {
        return Thread.currentThread().getId();
    }

    @Override
    public void lock() {
        uninterruptibly(current(), -1);
    }

    @Override
    public void lock(long leaseTime, TimeUnit unit) {
        uninterruptibly(current(), LockImpl.lease(leaseTime, unit));
    }

    private void uninterruptibly(long threadId, long leaseMs) {
        try {
            take(threadId, leaseMs, -1, false);
        } catch (InterruptedException e) {
            throw new IllegalStateException("an uninterruptible wait was interrupted", e);
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        take(current(), -1, -1, true);
    }

    @Override
    public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        take(current(), LockImpl.lease(leaseTime, unit), -1, true);
    }

    @Override
    public boolean tryLock() {
        try {
            return take(current(), -1, 0, false);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return take(current(), -1, LockImpl.waitMillis(time, unit), true);
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return take(current(), LockImpl.lease(leaseTime, unit), LockImpl.waitMillis(waitTime, unit), true);
    }

    @Override
    public void unlock() {
        release(current());
    }

    // ---- async (Redisson's RLockAsync) ----

    @Override
    public CompletableFuture<Void> lockAsync() {
        return lockAsync(-1, TimeUnit.MILLISECONDS, current());
    }

    @Override
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
        return lockAsync(leaseTime, unit, current());
    }

    @Override
    public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
        long leaseMs = LockImpl.lease(leaseTime, unit);
        return engine.async(() -> {
            take(threadId, leaseMs, -1, true);
            return null;
        });
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync() {
        long threadId = current();
        return engine.async(() -> take(threadId, -1, 0, false));
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
        return tryLockAsync(waitTime, -1, unit, current());
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return tryLockAsync(waitTime, leaseTime, unit, current());
    }

    @Override
    public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        long leaseMs = LockImpl.lease(leaseTime, unit);
        long waitMs = LockImpl.waitMillis(waitTime, unit);
        return engine.async(() -> take(threadId, leaseMs, waitMs, true));
    }

    @Override
    public CompletableFuture<Void> unlockAsync() {
        return unlockAsync(current());
    }

    @Override
    public CompletableFuture<Void> unlockAsync(long threadId) {
        return engine.async(() -> {
            release(threadId);
            return null;
        });
    }

    @Override
    public CompletableFuture<Boolean> forceUnlockAsync() {
        return engine.async(this::forceUnlock);
    }

    @Override
    public CompletableFuture<Boolean> isLockedAsync() {
        return engine.async(this::isLocked);
    }

    @Override
    public CompletableFuture<Long> remainTimeToLiveAsync() {
        return engine.async(this::remainTimeToLive);
    }
}
