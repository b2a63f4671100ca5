package io.rlock.internal;

import io.rlock.*;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** {@link RLock} for a plain lock ({@code RLOCK.*}) or one side of a read-write lock ({@code RWLOCK.*}). */
public final class LockImpl extends AcquiringLock {
    private final Family family;
    /** {@code LOCKDELAY} of its acquires, in ms (0: none, the server's default applies). */
    private final long lockDelayMs;
    /** Redisson's fair lock: {@link #unlock()} of a lock nobody holds (its lease ended) is silent. */
    private final boolean fair;

    public LockImpl(Engine engine, String name, Family family) {
        this(engine, name, family, 0, false);
    }

    private LockImpl(Engine engine, String name, Family family, long lockDelayMs, boolean fair) {
        super(engine, name);
        this.family = family;
        this.lockDelayMs = lockDelayMs;
        this.fair = fair;
    }

    /** Redisson's {@code getFairLock}: every rlock lock is FIFO; only {@link #unlock()} differs. */
    public static LockImpl fair(Engine engine, String name) {
        return new LockImpl(engine, name, Family.LOCK, 0, true);
    }

    @Override
    public RLock withLockDelay(long delay, TimeUnit unit) {
        plainOnly("a lock-delay");
        if (delay <= 0) {
            throw new IllegalArgumentException("a lock-delay of at least 1 ms");
        }
        return new LockImpl(engine, name, family, ceilMillis(unit.toNanos(delay)), fair);
    }

    @Override
    public Object guard(String... command) {
        plainOnly("a guarded write");
        if (command.length == 0) {
            throw new IllegalArgumentException("a guarded write needs a command");
        }
        // Sent even when this client already knows the holding lost: the server decides.
        Holding known = held();
        Object[] args = new Object[4 + command.length];
        args[0] = "RLOCK.GUARD";
        args[1] = name;
        args[2] = known.target.owner();
        args[3] = known.token;
        System.arraycopy(command, 0, args, 4, command.length);
        try {
            return engine.write(name, args);
        } catch (RLockException e) {
            if (!"NOTOWNER".equals(e.code())) {
                throw e;
            }
            engine.holdings().lost(known);
            throw new LockLostException(e.getMessage());
        }
    }

    private void plainOnly(String what) {
        if (family != Family.LOCK) {
            throw new UnsupportedOperationException(what + " is for plain locks only, not " + this);
        }
    }

    @Override
    protected boolean take(long threadId, long leaseMs, long waitMs, boolean interruptible) throws InterruptedException {
        try {
            return engine.acquire(family, name, engine.owner(threadId), 1, leaseMs, waitMs, interruptible, lockDelayMs) >= 0;
        } catch (RLockException e) {
            if (family != Family.WRITE || waitMs != 0 || e.getMessage() == null || !e.getMessage().contains(UPGRADE)) {
                throw e;
            }
            // A reader's tryLock() of the write lock answers false, as Redisson's. With a wait it
            // fails at once (clients/spec: UpgradeRefused), where Redisson's would answer false
            // after waiting for what only this thread could do.
            return false;
        }
    }

    /** What the server's refusal of an upgrade says ({@code ERR this owner holds the read lock ...}). */
    private static final String UPGRADE = "holds the read lock";

    @Override
    protected void release(long threadId) {
        if (engine.release(family, name, engine.owner(threadId), 1) < 0 && !(fair && !isLocked())) {
            throw new IllegalMonitorStateException("attempt to unlock lock, not locked by current thread by node id: "
                    + engine.id + " thread-id: " + threadId);
        }
    }

    /**
     * Whether anyone holds it; for a side of a read-write lock, whether anyone holds that side
     * (as Redisson: a writer's read holds make the read side locked, a writer alone does not).
     */
    @Override
    public boolean isLocked() {
        return isLocked(info());
    }

    private boolean isLocked(Map<String, Object> info) {
        if (info == null) {
            return false;
        }
        if (family == Family.LOCK || family.type.equals(Engine.text(info.get("mode")))) {
            return true;
        }
        return family == Family.READ && info.get("holders") instanceof List<?> holders
                && holders.stream().map(Replies::map).anyMatch(holder -> holder != null
                        && family.type.equals(Engine.text(holder.get("mode"))) && Replies.number(holder.get("holds"), 0) > 0);
    }

    @Override
    public boolean isHeldByCurrentThread() {
        return isHeldByThread(Thread.currentThread().getId());
    }

    @Override
    public boolean isHeldByThread(long threadId) {
        String owner = engine.owner(threadId);
        Holding known = engine.holdings().get(new Target(family, name, owner));
        if (known != null && known.isLost()) {
            return false;
        }
        return holds(owner) > 0;
    }

    @Override
    public int getHoldCount() {
        return (int) holds(engine.owner());
    }

    private long holds(String owner) {
        Map<String, Object> info = info();
        if (info == null) {
            return 0;
        }
        if (family == Family.LOCK) {
            return owner.equals(Engine.text(info.get("owner"))) ? Replies.number(info.get("holds"), 0) : 0;
        }
        Object holders = info.get("holders");
        if (!(holders instanceof List)) {
            return 0;
        }
        for (Object entry : (List<?>) holders) {
            Map<String, Object> holder = Replies.map(entry);
            if (holder != null && owner.equals(Engine.text(holder.get("owner")))
                    && family.type.equals(Engine.text(holder.get("mode")))) {
                return Replies.number(holder.get("holds"), 0);
            }
        }
        return 0;
    }

    /**
     * Removes the lock whoever holds it; on a side of a read-write lock only when that side is
     * held (Redisson's: the write lock's forceUnlock leaves readers alone, and the other way).
     * The check and the removal are two calls.
     */
    @Override
    public boolean forceUnlock() {
        if (family != Family.LOCK && !isLocked()) {
            return false;
        }
        return Long.valueOf(1).equals(engine.write(name, family.prefix + ".FORCERELEASE", name));
    }

    @Override
    public long remainTimeToLive() {
        Map<String, Object> info = info();
        return info == null ? -2 : Replies.number(info.get("ttl"), -1);
    }

    @Override
    public long getToken() {
        Holding known = held();
        if (known.isLost()) {
            throw new LockLostException("the current thread's holding of " + this + " was lost");
        }
        return known.token;
    }

    /** The calling thread's holding as this client knows it, lost or not. */
    private Holding held() {
        Holding known = engine.holdings().get(new Target(family, name, engine.owner()));
        if (known == null) {
            throw new IllegalMonitorStateException("the current thread does not hold " + this);
        }
        return known;
    }

    private Map<String, Object> info() {
        return engine.info(family.prefix + ".INFO", name);
    }

    /** A lease in ms; -1 (any negative) for the watchdog. */
    static long lease(long leaseTime, TimeUnit unit) {
        if (leaseTime < 0) {
            return -1;
        }
        if (leaseTime == 0) {
            throw new IllegalArgumentException("a lease time of 0");
        }
        return ceilMillis(unit.toNanos(leaseTime));
    }

    /** A wait in ms: 0 for no waiting (a time of 0 or less). */
    public static long waitMillis(long time, TimeUnit unit) {
        return time <= 0 ? 0 : ceilMillis(unit.toNanos(time));
    }

    private static long ceilMillis(long nanos) {
        return Math.max(1, nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1));
    }

    /** Whether it is a plain lock of {@code engine}'s client (what a multi-lock takes). */
    public boolean isPlainOf(Engine engine) {
        return this.engine == engine && family == Family.LOCK;
    }

    @Override
    public String toString() {
        return family.type + " lock " + name;
    }
}
