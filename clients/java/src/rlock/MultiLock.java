package rlock;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Several plain locks taken all or none, in the shape of Redisson's {@code RedissonMultiLock}
 * ({@link RLockClient#getMultiLock(RLock...)}): one {@code RLOCK.ACQUIREALL} takes every key at
 * once or nothing, and a waiting thread holds one place in each key's queue until it can take
 * them all in one step (it never holds part of them). {@link #unlock()} is one
 * {@code RLOCK.RELEASEALL}. Each key becomes an ordinary holding of the calling thread (the owner
 * is {@code <client id>:<thread id>}, as for {@link RLock}): a key the thread holds already is
 * re-entered, and the single locks' {@code isHeldByCurrentThread()} and {@code getToken()} see it.
 *
 * <p>In Redis Cluster all keys must share a slot (a hash tag), else the server answers
 * {@code CROSSSLOT}. A wait that would close a cycle of owners throws {@link DeadlockException}
 * at once, nothing taken or queued.
 */
public final class MultiLock extends AcquiringLock {
    private final List<LockImpl> locks;
    private final List<String> keys;
    /** {@code LOCKDELAY} of its acquires, in ms (0: none). */
    private final long lockDelayMs;

    MultiLock(Engine engine, List<LockImpl> locks, long lockDelayMs) {
        super(engine, String.join(",", names(locks)));
        this.locks = List.copyOf(locks);
        this.keys = names(locks);
        this.lockDelayMs = lockDelayMs;
    }

    /** The locks' names, in order, checked: 1 to 1000 of them, none twice. */
    private static List<String> names(List<LockImpl> locks) {
        if (locks.isEmpty() || locks.size() > 1000) {
            throw new IllegalArgumentException("a multi-lock takes 1 to 1000 locks, not " + locks.size());
        }
        List<String> names = new ArrayList<>(locks.size());
        for (LockImpl lock : locks) {
            names.add(lock.getName());
        }
        if (new HashSet<>(names).size() != names.size()) {
            throw new IllegalArgumentException("a lock is named more than once: " + names);
        }
        return List.copyOf(names);
    }

    /** The multi-lock of {@code locks}: plain locks ({@link RLockClient#getLock}) of one client. */
    static MultiLock of(Engine engine, RLock... locks) {
        List<LockImpl> plain = new ArrayList<>(locks.length);
        for (RLock lock : locks) {
            if (!(lock instanceof LockImpl) || !((LockImpl) lock).isPlainOf(engine)) {
                throw new IllegalArgumentException("a multi-lock takes plain locks of its own client, not " + lock);
            }
            plain.add((LockImpl) lock);
        }
        return new MultiLock(engine, plain, 0);
    }

    /** Its keys, in the order of its tokens. */
    public List<String> getNames() {
        return keys;
    }

    // ---- acquiring ----

    /**
     * {@code RLOCK.ACQUIREALL}: the tokens in key order, or null when not granted (nothing held).
     * The wait is told by one message per key ({@code NOTIFY}): the one core, {@link Acquire}.
     */
    @Override
    boolean take(long leaseMs, long waitMs, boolean interruptible) throws InterruptedException {
        return Acquire.all(engine, keys, engine.owner(), lockDelayMs).run(leaseMs, waitMs, interruptible) != null;
    }

    // ---- releasing ----

    /**
     * Gives back one hold of each key ({@code RLOCK.RELEASEALL}), in one step.
     *
     * @throws IllegalMonitorStateException when the calling thread did not hold one of the keys
     *         (the others are released all the same)
     */
    @Override
    public void unlock() {
        List<String> notHeld = engine.releaseAll(keys, engine.owner());
        if (!notHeld.isEmpty()) {
            throw new IllegalMonitorStateException("attempt to unlock " + notHeld + ", not locked by current thread by node id: "
                    + engine.id + " thread-id: " + Thread.currentThread().getId());
        }
    }

    // ---- asking ----

    /** Whether every key is held (by anyone). */
    @Override
    public boolean isLocked() {
        return locks.stream().allMatch(RLock::isLocked);
    }

    /** Whether the calling thread holds every key. */
    @Override
    public boolean isHeldByCurrentThread() {
        return locks.stream().allMatch(RLock::isHeldByCurrentThread);
    }

    @Override
    public boolean isHeldByThread(long threadId) {
        return locks.stream().allMatch(lock -> lock.isHeldByThread(threadId));
    }

    /** The smallest hold count of the calling thread among the keys. */
    @Override
    public int getHoldCount() {
        return locks.stream().mapToInt(RLock::getHoldCount).min().orElse(0);
    }

    /** Removes every key whoever holds it; true when any was held. */
    @Override
    public boolean forceUnlock() {
        boolean any = false;
        for (RLock lock : locks) {
            any |= lock.forceUnlock();
        }
        return any;
    }

    /** The shortest time to live among the keys (-2 when one is not held, -1 when none expires). */
    @Override
    public long remainTimeToLive() {
        long shortest = -1;
        for (RLock lock : locks) {
            long ttl = lock.remainTimeToLive();
            if (ttl == -2) {
                return -2;
            }
            if (ttl >= 0 && (shortest < 0 || ttl < shortest)) {
                shortest = ttl;
            }
        }
        return shortest;
    }

    /** The calling thread's fencing tokens, in key order. */
    public long[] getTokens() {
        long[] tokens = new long[locks.size()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = locks.get(i).getToken();
        }
        return tokens;
    }

    /** Not one token: see {@link #getTokens()}. */
    @Override
    public long getToken() {
        throw new UnsupportedOperationException("a multi-lock has one token per key: getTokens()");
    }

    /** Not supported: guard a write with one of the single locks ({@code getLock(key).guard(...)}). */
    @Override
    public Object guard(String... command) {
        throw new UnsupportedOperationException("guard a write with one of the locks of " + this);
    }

    @Override
    public MultiLock withLockDelay(long delay, TimeUnit unit) {
        if (delay <= 0) {
            throw new IllegalArgumentException("a lock-delay of at least 1 ms");
        }
        return new MultiLock(engine, locks, LockImpl.waitMillis(delay, unit));
    }

    @Override
    public String toString() {
        return "multi-lock " + keys;
    }
}
