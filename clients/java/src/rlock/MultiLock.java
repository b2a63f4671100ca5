package rlock;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import rlock.resp.Cluster;

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
     * The wait is told by one message per key ({@code NOTIFY}); see {@link Engine#acquire}.
     */
    @Override
    boolean take(long leaseMs, long waitMs, boolean interruptible) throws InterruptedException {
        return acquire(leaseMs, waitMs, interruptible) != null;
    }

    private long[] acquire(long leaseMs, long waitMs, boolean interruptible) throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        String owner = engine.owner();
        waitMs = Engine.forever(waitMs);
        boolean watchdog = leaseMs < 0;
        long lease = engine.lease(leaseMs);
        String requestId = Engine.requestId();
        String first = keys.get(0);
        if (waitMs == 0) {
            Router.Reply reply = engine.router().call(first, args(owner, lease, watchdog, Family.NO_WAIT, 0, requestId));
            return granted(reply.node(), reply.value(), owner, watchdog, lease);
        }
        long deadline = waitMs < 0 ? Long.MAX_VALUE : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
        Node node = engine.router().nodeFor(first);
        boolean asking = false;
        int redirects = 0;
        int failures = 0;
        boolean[] interrupted = {false};
        try {
            while (true) {
                Node.Session session = engine.session(node);
                long left = deadline == Long.MAX_VALUE ? 0 : deadline - System.nanoTime();
                boolean over = deadline != Long.MAX_VALUE && left <= 0;
                long waitArg = deadline == Long.MAX_VALUE ? 0 : over ? Family.NO_WAIT : Engine.ceilMillis(left);
                List<Waiter> waiters = over ? List.of() : register(owner, node, session.generation, deadline);
                Object[] args = args(owner, lease, watchdog, waitArg, session.notifyId, requestId);
                Object reply;
                try {
                    reply = asking ? session.conn.callAsking(args) : session.conn.call(args);
                } catch (IOException e) {
                    drop(waiters, 0);
                    session.close();
                    if (++failures > 1) {
                        throw new RLockException("no reply from " + node + " to RLOCK.ACQUIREALL: " + e.getMessage(), e);
                    }
                    continue; // the same call, with its same request id, on a new connection
                }
                failures = 0;
                boolean asked = asking;
                asking = false;
                if ("WAITING".equals(reply)) {
                    Event event;
                    try {
                        event = engine.park(waiters.get(0), session, interruptible, deadline, interrupted, 1);
                    } catch (InterruptedException e) {
                        drop(waiters, 1); // the cancel took the whole request out; a raced grant is given back
                        throw e;
                    }
                    switch (event.kind) {
                        case GRANTED:
                            long[] tokens = tokens(event, waiters);
                            if (tokens == null) {
                                throw new RLockException("ERR", "the grant of " + keys + " came without a token for every key");
                            }
                            if (watchdog && !confirm(node, asked, owner, lease)) {
                                requestId = Engine.requestId(); // it ended before we could confirm it: ask again
                                continue;
                            }
                            record(node, owner, tokens, watchdog, lease);
                            return tokens;
                        case TIMEOUT:
                            drop(waiters, 1);
                            return null;
                        case DISCONNECTED:
                            drop(waiters, 1);
                            continue; // sent again with the same request id
                        case CLOSED:
                            drop(waiters, 1);
                            throw Engine.closedException();
                        case FAILED:
                        default:
                            drop(waiters, 1);
                            if (Engine.movable(event.code)) {
                                pause(interruptible, interrupted);
                                node = engine.router().nodeFor(first);
                                continue;
                            }
                            throw new RLockException(event.code, "the wait for " + keys + " failed: " + event.code);
                    }
                }
                drop(waiters, 0);
                Cluster.Redirect redirect = engine.router().redirect(node, reply);
                if (redirect != null) {
                    if (++redirects > Router.MAX_REDIRECTS) {
                        throw new RLockException("CLUSTER", "more than " + Router.MAX_REDIRECTS + " redirections for " + keys);
                    }
                    node = engine.router().node(redirect.host, redirect.port);
                    asking = redirect.ask;
                    continue;
                }
                return granted(node, reply, owner, watchdog, lease);
            }
        } finally {
            if (interrupted[0]) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * {@code RLOCK.ACQUIREALL numkeys key... owner PX lease [WATCHDOG] [WAIT ms NOTIFY [id]] ID id
     * [LOCKDELAY ms]}.
     */
    private Object[] args(String owner, long lease, boolean watchdog, long waitMs, long notifyId, String requestId) {
        List<Object> args = new ArrayList<>(keys.size() + 16);
        args.add("RLOCK.ACQUIREALL");
        args.add((long) keys.size());
        args.addAll(keys);
        args.add(owner);
        Family.addOptions(args, lease, watchdog, waitMs, notifyId, requestId, lockDelayMs);
        return args.toArray();
    }

    /** One waiter per key: the server tells a multi-key wait by one message per key. */
    private List<Waiter> register(String owner, Node node, long generation, long deadline) {
        List<Waiter> waiters = new ArrayList<>(keys.size());
        for (String key : keys) {
            waiters.add(engine.hub().register(new Target(Family.LOCK, key, owner), node, generation, deadline));
        }
        return waiters;
    }

    /** Unregisters the waiters from {@code from} on; a grant that reached one is given back. */
    private void drop(List<Waiter> waiters, int from) {
        for (Waiter waiter : waiters.subList(Math.min(from, waiters.size()), waiters.size())) {
            Event told = engine.hub().unregister(waiter);
            if (told != null && told.kind == Event.Kind.GRANTED) {
                engine.releaseQuietly(waiter.node, waiter.target);
            }
        }
    }

    /**
     * The tokens of a grant: the first key's from {@code first}, the others' from their
     * messages, sent in the same server turn (so already here, or about to be).
     */
    private long[] tokens(Event first, List<Waiter> waiters) throws InterruptedException {
        long[] tokens = new long[waiters.size()];
        tokens[0] = first.token;
        for (int i = 1; i < waiters.size(); i++) {
            Event event = waiters.get(i).await(TimeUnit.SECONDS.toNanos(5));
            engine.hub().unregister(waiters.get(i));
            if (event == null || event.kind != Event.Kind.GRANTED) {
                return null;
            }
            tokens[i] = event.token;
        }
        return tokens;
    }

    /** A watchdog grant told by message starts its renewals once confirmed, key by key. */
    private boolean confirm(Node node, boolean asking, String owner, long lease) {
        for (String key : keys) {
            if (!engine.confirm(node, asking, new Target(Family.LOCK, key, owner), lease)) {
                release(owner); // part of it ended meanwhile: give back the rest and ask again
                return false;
            }
        }
        return true;
    }

    /** A call's answer to an acquire: the tokens (recorded), null for nil; errors raised. */
    private long[] granted(Node node, Object reply, String owner, boolean watchdog, long lease) {
        if (reply == null) {
            return null;
        }
        Replies.check(reply);
        if (!(reply instanceof List) || ((List<?>) reply).size() != keys.size()) {
            throw new RLockException("ERR", "unexpected reply to RLOCK.ACQUIREALL: " + Engine.text(reply));
        }
        List<?> list = (List<?>) reply;
        long[] tokens = new long[list.size()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = Replies.number(list.get(i), -1);
        }
        record(node, owner, tokens, watchdog, lease);
        return tokens;
    }

    private void record(Node node, String owner, long[] tokens, boolean watchdog, long lease) {
        for (int i = 0; i < tokens.length; i++) {
            engine.holdings().granted(new Target(Family.LOCK, keys.get(i), owner), node, tokens[i], watchdog, lease, 1);
        }
    }

    private static void pause(boolean interruptible, boolean[] interrupted) throws InterruptedException {
        try {
            Engine.pause(100);
        } catch (InterruptedException e) {
            if (interruptible) {
                throw e;
            }
            interrupted[0] = true;
        }
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
        List<String> notHeld = release(engine.owner());
        if (!notHeld.isEmpty()) {
            throw new IllegalMonitorStateException("attempt to unlock " + notHeld + ", not locked by current thread by node id: "
                    + engine.id + " thread-id: " + Thread.currentThread().getId());
        }
    }

    /** {@code RLOCK.RELEASEALL} for {@code owner}: the keys it did not hold. */
    private List<String> release(String owner) {
        List<Object> args = new ArrayList<>(keys.size() + 5);
        args.add("RLOCK.RELEASEALL");
        args.add((long) keys.size());
        args.addAll(keys);
        args.add(owner);
        args.add("ID");
        args.add(Engine.requestId());
        Object reply = engine.call(keys.get(0), args.toArray());
        if (!(reply instanceof List) || ((List<?>) reply).size() != keys.size()) {
            throw new RLockException("ERR", "unexpected reply to RLOCK.RELEASEALL: " + Engine.text(reply));
        }
        List<?> counts = (List<?>) reply;
        List<String> notHeld = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            Target target = new Target(Family.LOCK, keys.get(i), owner);
            Object count = counts.get(i);
            if (count == null) {
                notHeld.add(keys.get(i));
                engine.holdings().released(target, null);
            } else {
                engine.holdings().released(target, Replies.number(count, 0));
            }
        }
        return notHeld;
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
