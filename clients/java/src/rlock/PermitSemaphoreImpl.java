package rlock;

import java.util.UUID;
import java.util.concurrent.TimeUnit;

final class PermitSemaphoreImpl extends PermitsHandle implements RPermitExpirableSemaphore {
    PermitSemaphoreImpl(Engine engine, String name) {
        super(engine, name);
    }

    @Override
    public String acquire() throws InterruptedException {
        return take(-1, -1, true);
    }

    @Override
    public String acquire(long leaseTime, TimeUnit unit) throws InterruptedException {
        return take(LockImpl.lease(leaseTime, unit), -1, true);
    }

    @Override
    public String tryAcquire() {
        try {
            return take(-1, 0, false);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
        return take(-1, LockImpl.waitMillis(waitTime, unit), true);
    }

    @Override
    public String tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return take(LockImpl.lease(leaseTime, unit), LockImpl.waitMillis(waitTime, unit), true);
    }

    private String take(long leaseMs, long waitMs, boolean interruptible) throws InterruptedException {
        String permitId = UUID.randomUUID().toString().replace("-", "");
        return engine.acquire(Family.PERMITS, name, permitId, 1, leaseMs, waitMs, interruptible) >= 0 ? permitId : null;
    }

    @Override
    public boolean tryRelease(String permitId) {
        return engine.release(Family.PERMITS, name, permitId, 1) >= 0;
    }

    @Override
    public void release(String permitId) {
        if (!tryRelease(permitId)) {
            throw new IllegalArgumentException("Permit with id " + permitId + " has already been released or doesn't exist");
        }
    }

    @Override
    public boolean updateLeaseTime(String permitId, long leaseTime, TimeUnit unit) {
        long lease = LockImpl.lease(leaseTime, unit);
        if (lease < 0) {
            throw new IllegalArgumentException("a lease time is needed");
        }
        boolean held = Long.valueOf(1).equals(engine.write(name, "RSEM.RENEW", name, permitId, "PX", lease));
        if (held) {
            engine.holdings().renewed(new Target(Family.PERMITS, name, permitId), lease);
        }
        return held;
    }
}
