package io.rlock.spring.integration;

import io.rlock.RLock;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import org.springframework.integration.support.locks.DistributedLock;

/**
 * A lock of an {@link RLockRegistry}: an rlock {@link RLock}, owned by the calling thread (as
 * {@code RedisLockRegistry}'s locks are) and held by the server's watchdog unless a time to live
 * is given. Waiting happens in the server's FIFO queue, not by polling or Pub/Sub.
 */
final class RegistryLock implements DistributedLock {
    private final RLock lock;
    private final String path;
    /**
     * The threads of this process that hold the lock through this object, and whether each took
     * it with a time to live (a lease to renew) or by the watchdog: a lock in use is never expired
     * from the registry's cache.
     */
    private final ConcurrentMap<Long, Hold> holders = new ConcurrentHashMap<>();
    private volatile long lockedAt;

    RegistryLock(RLock lock, String path) {
        this.lock = lock;
        this.path = path;
    }

    @Override
    public void lock() {
        lock.lock();
        taken(false);
    }

    @Override
    public void lock(Duration ttl) {
        lock.lock(positiveMillis(ttl, "ttl"), TimeUnit.MILLISECONDS);
        taken(true);
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lock.lockInterruptibly();
        taken(false);
    }

    @Override
    public boolean tryLock() {
        return taken(lock.tryLock(), false);
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return taken(lock.tryLock(time, unit), false);
    }

    @Override
    public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
        long wait = waitTime.isNegative() ? 0 : waitTime.toMillis();
        return taken(lock.tryLock(wait, positiveMillis(ttl, "ttl"), TimeUnit.MILLISECONDS), true);
    }

    /**
     * Releases one hold of the calling thread.
     *
     * @throws IllegalStateException when the calling thread does not hold the lock (never took
     *         it, or its holding ended: lease run out, connection lost), as RedisLockRegistry's
     */
    @Override
    public void unlock() {
        try {
            lock.unlock();
        } catch (IllegalMonitorStateException notHeld) {
            holders.remove(currentThread());
            throw new IllegalStateException("You do not own lock at " + lock.getName(), notHeld);
        }
        holders.computeIfPresent(currentThread(), (thread, hold) -> --hold.count > 0 ? hold : null);
    }

    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("Conditions are not supported");
    }

    /**
     * Resets the calling thread's holding's time to live: a holding taken with one gets
     * {@code ttl} from now; a watchdog holding needs nothing (the server renews it), and is
     * only checked to be held.
     */
    void renew(Duration ttl) {
        long ms = positiveMillis(ttl, "ttl");
        Hold hold = holders.get(currentThread());
        if (hold == null || !lock.isHeldByCurrentThread()) {
            throw new IllegalStateException("Could not renew mutex at " + path + ": not held by the current thread");
        }
        if (!hold.leased) {
            return;
        }
        // A re-entry with a lease resets the lease; the release takes the extra hold back.
        try {
            if (!lock.tryLock(0, ms, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("Could not renew mutex at " + path + ": its holding ended");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Could not renew mutex at " + path + ": interrupted", e);
        }
        lock.unlock();
    }

    long lockedAt() {
        return lockedAt;
    }

    boolean isAcquiredInThisProcess() {
        return !holders.isEmpty();
    }

    String path() {
        return path;
    }

    private boolean taken(boolean acquired, boolean leased) {
        if (acquired) {
            taken(leased);
        }
        return acquired;
    }

    private void taken(boolean leased) {
        holders.compute(currentThread(), (thread, hold) -> {
            if (hold == null) {
                return new Hold(leased);
            }
            hold.count++;
            return hold;
        });
        lockedAt = System.currentTimeMillis();
    }

    /** The calling thread's id: the owner part of the lock's holding (Thread.getId, as on Java 17). */
    @SuppressWarnings("deprecation")
    private static long currentThread() {
        return Thread.currentThread().getId();
    }

    /** One thread's holds; only that thread changes it (inside the map's compute). */
    private static final class Hold {
        final boolean leased;
        int count = 1;

        Hold(boolean leased) {
            this.leased = leased;
        }
    }

    static long positiveMillis(Duration duration, String what) {
        return Math.max(1, requirePositive(duration, what).toMillis());
    }

    static Duration requirePositive(Duration duration, String what) {
        if (duration == null || duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(what + " must be a positive duration, got " + duration);
        }
        return duration;
    }

    @Override
    public String toString() {
        return "RegistryLock[" + lock.getName() + "]";
    }
}
