package io.rlock.internal;

import io.rlock.*;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

public final class PermitSemaphoreImpl extends PermitsHandle implements RPermitExpirableSemaphore {
    public PermitSemaphoreImpl(Engine engine, String name) {
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
        String permitId = freshId();
        return engine.acquire(Family.PERMITS, name, permitId, 1, leaseMs, waitMs, interruptible) >= 0 ? permitId : null;
    }

    /** A permit id, or the base of n ids: random hex, as Redisson's. */
    private static String freshId() {
        return UUID.randomUUID().toString().replace("-", "");
    }

    @Override
    public List<String> acquire(int permits) throws InterruptedException {
        return takeMany(permits, -1, -1, true);
    }

    @Override
    public List<String> acquire(int permits, long leaseTime, TimeUnit unit) throws InterruptedException {
        return takeMany(permits, LockImpl.lease(leaseTime, unit), -1, true);
    }

    @Override
    public List<String> tryAcquire(int permits) {
        try {
            return takeMany(permits, -1, 0, false);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public List<String> tryAcquire(int permits, long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return takeMany(permits, LockImpl.lease(leaseTime, unit), LockImpl.waitMillis(waitTime, unit), true);
    }

    /**
     * {@code permits} ids in one request ({@code RSEM.ACQUIRE ... EACH}): {@code <base>:1} to
     * {@code <base>:<permits>}, or an empty list when not granted. A mutable list, as Redisson's.
     */
    private List<String> takeMany(int permits, long leaseMs, long waitMs, boolean interruptible) throws InterruptedException {
        if (permits < 0) {
            throw new IllegalArgumentException("Permits amount can't be negative");
        }
        if (permits == 0) {
            return new ArrayList<>();
        }
        Acquire request = Acquire.each(engine, name, freshId(), permits);
        return request.run(leaseMs, waitMs, interruptible) == null ? new ArrayList<>() : new ArrayList<>(request.holders());
    }

    @Override
    public boolean tryRelease(String permitId) {
        return engine.release(Family.PERMITS, name, permitId, 1) >= 0;
    }

    @Override
    public int tryRelease(List<String> permitIds) {
        // As Redisson's script: all of them, or none and 0 when one is not held.
        try {
            return (int) engine.releaseMany(name, checkIds(permitIds), true);
        } catch (RLockException e) {
            if (notHeld(e)) {
                return 0;
            }
            throw e;
        }
    }

    @Override
    public void release(List<String> permitIds) {
        try {
            engine.releaseMany(name, checkIds(permitIds), true);
        } catch (RLockException e) {
            if (!notHeld(e)) {
                throw e;
            }
            throw new RLockException(e.code(), "Permits with ids " + permitIds
                    + " have not been released: one has already been released or doesn't exist (" + e.getMessage() + ")");
        }
    }

    private static boolean notHeld(RLockException e) {
        return e.getMessage() != null && e.getMessage().contains("not held");
    }

    private static List<String> checkIds(List<String> permitIds) {
        if (permitIds == null || permitIds.isEmpty()) {
            throw new IllegalArgumentException("permitIds can't be null or empty");
        }
        return List.copyOf(permitIds);
    }

    @Override
    public void release(String permitId) {
        if (!tryRelease(permitId)) {
            throw new RLockException("ERR", "Permit with id " + permitId + " has already been released or doesn't exist");
        }
    }

    @Override
    public CompletableFuture<String> acquireAsync() {
        return engine.async(this::acquire);
    }

    @Override
    public CompletableFuture<String> acquireAsync(long leaseTime, TimeUnit unit) {
        return engine.async(() -> acquire(leaseTime, unit));
    }

    @Override
    public CompletableFuture<List<String>> acquireAsync(int permits) {
        return engine.async(() -> acquire(permits));
    }

    @Override
    public CompletableFuture<List<String>> acquireAsync(int permits, long leaseTime, TimeUnit unit) {
        return engine.async(() -> acquire(permits, leaseTime, unit));
    }

    @Override
    public CompletableFuture<String> tryAcquireAsync() {
        return engine.async(this::tryAcquire);
    }

    @Override
    public CompletableFuture<List<String>> tryAcquireAsync(int permits) {
        return engine.async(() -> tryAcquire(permits));
    }

    @Override
    public CompletableFuture<String> tryAcquireAsync(long waitTime, TimeUnit unit) {
        return engine.async(() -> tryAcquire(waitTime, unit));
    }

    @Override
    public CompletableFuture<String> tryAcquireAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return engine.async(() -> tryAcquire(waitTime, leaseTime, unit));
    }

    @Override
    public CompletableFuture<List<String>> tryAcquireAsync(int permits, long waitTime, long leaseTime, TimeUnit unit) {
        return engine.async(() -> tryAcquire(permits, waitTime, leaseTime, unit));
    }

    @Override
    public CompletableFuture<Integer> tryReleaseAsync(List<String> permitIds) {
        return engine.async(() -> tryRelease(permitIds));
    }

    @Override
    public CompletableFuture<Void> releaseAsync(List<String> permitIds) {
        return engine.async(() -> {
            release(permitIds);
            return null;
        });
    }

    @Override
    public CompletableFuture<Boolean> tryReleaseAsync(String permitId) {
        return engine.async(() -> tryRelease(permitId));
    }

    @Override
    public CompletableFuture<Void> releaseAsync(String permitId) {
        return engine.async(() -> {
            release(permitId);
            return null;
        });
    }

    @Override
    public int acquiredPermits() {
        return holders().stream().mapToInt(holder -> (int) Replies.number(holder.get("permits"), 0)).sum();
    }

    @Override
    public int getPermits() {
        return availablePermits() + acquiredPermits();
    }

    @Override
    public void setPermits(int permits) {
        if (!trySetPermits(permits)) {
            addPermits(permits - getPermits());
        }
    }

    @Override
    public long getLeaseTime(String permitId) {
        for (Map<String, Object> holder : holders()) {
            if (permitId.equals(Engine.text(holder.get("owner")))) {
                return holder.get("watchdog") != null ? -1 : Replies.number(holder.get("ttl"), -1);
            }
        }
        throw new RLockException("ERR", "Permit with id " + permitId + " doesn't exist");
    }

    /** The holders {@code RSEM.INFO} lists (none when the semaphore does not exist). */
    private List<Map<String, Object>> holders() {
        Map<String, Object> info = engine.info("RSEM.INFO", name);
        if (info == null || !(info.get("holders") instanceof List<?> holders)) {
            return List.of();
        }
        return holders.stream().map(Replies::map).filter(java.util.Objects::nonNull).toList();
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
