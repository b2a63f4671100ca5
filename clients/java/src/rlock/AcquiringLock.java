package rlock;

import java.util.concurrent.TimeUnit;

/**
 * The waiting methods of {@link RLock} ({@code lock}, {@code lockInterruptibly}, {@code tryLock})
 * over one acquire: what a single lock and a {@link MultiLock} share.
 */
abstract class AcquiringLock extends Handle implements RLock {
    AcquiringLock(Engine engine, String name) {
        super(engine, name);
    }

    /**
     * Takes the lock: true when held, false when not within the wait.
     *
     * @param leaseMs -1: the watchdog; else a plain lease
     * @param waitMs  -1: without a deadline; 0: one attempt; else at most that long
     */
    abstract boolean take(long leaseMs, long waitMs, boolean interruptible) throws InterruptedException;

    @Override
    public void lock() {
        uninterruptibly(-1);
    }

    @Override
    public void lock(long leaseTime, TimeUnit unit) {
        uninterruptibly(LockImpl.lease(leaseTime, unit));
    }

    private void uninterruptibly(long leaseMs) {
        try {
            take(leaseMs, -1, false);
        } catch (InterruptedException e) {
            throw new IllegalStateException("an uninterruptible wait was interrupted", e);
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        take(-1, -1, true);
    }

    @Override
    public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        take(LockImpl.lease(leaseTime, unit), -1, true);
    }

    @Override
    public boolean tryLock() {
        try {
            return take(-1, 0, false);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return take(-1, LockImpl.waitMillis(time, unit), true);
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return take(LockImpl.lease(leaseTime, unit), LockImpl.waitMillis(waitTime, unit), true);
    }
}
