package io.rlock.internal;

import io.rlock.*;

import java.util.concurrent.TimeUnit;

public final class SemaphoreImpl extends PermitsHandle implements ROwnedSemaphore {
    public SemaphoreImpl(Engine engine, String name) {
        super(engine, name);
    }

    @Override
    public void acquire() throws InterruptedException {
        acquire(1);
    }

    @Override
    public void acquire(int permits) throws InterruptedException {
        engine.acquire(Family.PERMITS, name, engine.owner(), check(permits), -1, -1, true);
    }

    @Override
    public boolean tryAcquire() {
        return tryAcquire(1);
    }

    @Override
    public boolean tryAcquire(int permits) {
        try {
            return engine.acquire(Family.PERMITS, name, engine.owner(), check(permits), -1, 0, false) >= 0;
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public boolean tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
        return tryAcquire(1, waitTime, unit);
    }

    @Override
    public boolean tryAcquire(int permits, long waitTime, TimeUnit unit) throws InterruptedException {
        return engine.acquire(Family.PERMITS, name, engine.owner(), check(permits), -1,
                LockImpl.waitMillis(waitTime, unit), true) >= 0;
    }

    @Override
    public void release() {
        release(1);
    }

    @Override
    public void release(int permits) {
        if (engine.release(Family.PERMITS, name, engine.owner(), check(permits)) < 0) {
            throw new IllegalMonitorStateException("the current thread holds no permits of semaphore " + name);
        }
    }

    @Override
    public long getToken() {
        Holding known = engine.holdings().get(new Target(Family.PERMITS, name, engine.owner()));
        if (known == null) {
            throw new IllegalMonitorStateException("the current thread holds no permits of semaphore " + name);
        }
        if (known.isLost()) {
            throw new LockLostException("the current thread's permits of semaphore " + name + " were lost");
        }
        return known.token;
    }

    private static int check(int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1");
        }
        return permits;
    }
}
