package io.rlock;

import io.rlock.internal.*;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 *
 * <p>Locks of several clients ({@code new MultiLock(lock1, lock2, lock3)}, as Redisson's
 * {@code new RedissonMultiLock(...)}): each client's locks are taken all or none as above, the
 * clients one after the other in the order of the locks given, within the one wait; when one
 * client's are not granted in time, those already taken are released and nothing is held. Give
 * the locks in the same order everywhere: two threads that take them in opposite orders may each
 * wait for the other until their waits end (the server's deadlock detection sees one server).
 */
public final class MultiLock extends AcquiringLock {
    private final List<LockImpl> locks;
    private final List<String> keys;
    /** The locks of each client, in the order their first lock was given. */
    private final List<List<LockImpl>> byClient;
    /** {@code LOCKDELAY} of its acquires, in ms (0: none). */
    private final long lockDelayMs;

    MultiLock(Engine engine, List<LockImpl> locks, long lockDelayMs) {
        super(engine, String.join(",", names(locks)));
        this.locks = List.copyOf(locks);
        this.keys = names(locks);
        this.byClient = byClient(locks);
        this.lockDelayMs = lockDelayMs;
    }

    /**
     * Redisson's {@code new RedissonMultiLock(locks...)}: plain locks ({@link RLockClient#getLock})
     * of one client or of several (see the class comment).
     */
    public MultiLock(RLock... locks) {
        this(engineOf(locks), plain(locks), 0);
    }

    /** The locks' names, in order, checked: 1 to 1000 of them, none twice on one client. */
    private static List<String> names(List<LockImpl> locks) {
        if (locks.isEmpty() || locks.size() > 1000) {
            throw new IllegalArgumentException("a multi-lock takes 1 to 1000 locks, not " + locks.size());
        }
        List<String> names = new ArrayList<>(locks.size());
        for (List<LockImpl> group : byClient(locks)) {
            List<String> groupNames = group.stream().map(lock -> lock.name).toList();
            if (new HashSet<>(groupNames).size() != groupNames.size()) {
                throw new IllegalArgumentException("a lock is named more than once: " + groupNames);
            }
        }
        for (LockImpl lock : locks) {
            names.add(lock.name);
        }
        return List.copyOf(names);
    }

    private static List<List<LockImpl>> byClient(List<LockImpl> locks) {
        Map<Engine, List<LockImpl>> groups = new LinkedHashMap<>();
        for (LockImpl lock : locks) {
            groups.computeIfAbsent(lock.engine, engine -> new ArrayList<>()).add(lock);
        }
        return groups.values().stream().map(List::copyOf).toList();
    }

    private static Engine engineOf(RLock... locks) {
        if (locks.length == 0 || !(locks[0] instanceof LockImpl)) {
            throw new IllegalArgumentException("a multi-lock takes 1 to 1000 plain locks");
        }
        return ((LockImpl) locks[0]).engine;
    }

    private static List<LockImpl> plain(RLock... locks) {
        List<LockImpl> plain = new ArrayList<>(locks.length);
        for (RLock lock : locks) {
            if (!(lock instanceof LockImpl impl) || !impl.isPlainOf(impl.engine)) {
                throw new IllegalArgumentException("a multi-lock takes plain locks, not " + lock);
            }
            plain.add(impl);
        }
        return plain;
    }

    /** The multi-lock of {@code locks}: plain locks ({@link RLockClient#getLock}) of one client. */
    static MultiLock of(Engine engine, RLock... locks) {
        for (RLock lock : locks) {
            if (!(lock instanceof LockImpl) || !((LockImpl) lock).isPlainOf(engine)) {
                throw new IllegalArgumentException("a multi-lock takes plain locks of its own client, not " + lock);
            }
        }
        return new MultiLock(engine, plain(locks), 0);
    }

    /** Its locks' names (as given to {@code getLock}), in the order of its tokens. */
    public List<String> getNames() {
        return locks.stream().map(LockImpl::getName).toList();
    }

    // ---- acquiring ----

    /**
     * {@code RLOCK.ACQUIREALL}: the tokens in key order, or null when not granted (nothing held).
     * The wait is told by one message per key ({@code NOTIFY}): the one core, {@link Acquire}.
     */
    @Override
    protected boolean take(long threadId, long leaseMs, long waitMs, boolean interruptible) throws InterruptedException {
        long deadline = Engine.deadline(waitMs);
        for (int i = 0; i < byClient.size(); i++) {
            long left = waitMs <= 0 ? waitMs : Math.max(0, Engine.ceilMillis(deadline - System.nanoTime()));
            boolean granted = false;
            try {
                granted = takeAll(byClient.get(i), threadId, leaseMs, left, interruptible);
            } finally {
                if (!granted) {
                    releaseQuietly(byClient.subList(0, i), threadId);
                }
            }
            if (!granted) {
                return false;
            }
        }
        return true;
    }

    private boolean takeAll(List<LockImpl> group, long threadId, long leaseMs, long waitMs, boolean interruptible)
            throws InterruptedException {
        Engine client = group.get(0).engine;
        List<String> names = group.stream().map(lock -> lock.name).toList();
        return Acquire.all(client, names, client.owner(threadId), lockDelayMs).run(leaseMs, waitMs, interruptible) != null;
    }

    private void releaseQuietly(List<List<LockImpl>> groups, long threadId) {
        for (List<LockImpl> group : groups) {
            try {
                releaseAll(group, threadId);
            } catch (RuntimeException e) {
                // best effort: a lease or the watchdog's end frees it otherwise
            }
        }
    }

    /** One hold of each of {@code group}'s keys: the keys the calling thread did not hold. */
    private static List<String> releaseAll(List<LockImpl> group, long threadId) {
        Engine client = group.get(0).engine;
        return client.releaseAll(group.stream().map(lock -> lock.name).toList(), client.owner(threadId));
    }

    // ---- releasing ----

    /**
     * Gives back one hold of each key ({@code RLOCK.RELEASEALL}), in one step.
     *
     * @throws IllegalMonitorStateException when the calling thread did not hold one of the keys
     *         (the others are released all the same)
     */
    @Override
    protected void release(long threadId) {
        List<String> notHeld = new ArrayList<>();
        for (List<LockImpl> group : byClient) {
            notHeld.addAll(releaseAll(group, threadId));
        }
        if (!notHeld.isEmpty()) {
            throw new IllegalMonitorStateException("attempt to unlock " + notHeld + ", not locked by current thread by node id: "
                    + engine.id + " thread-id: " + threadId);
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

    /** Not supported, as Redisson's: add listeners to the single locks. */
    @Override
    public int addListener(ObjectListener listener) {
        throw new UnsupportedOperationException("add listeners to the locks of " + this);
    }

    @Override
    public void removeListener(int listenerId) {
        throw new UnsupportedOperationException("remove listeners from the locks of " + this);
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
