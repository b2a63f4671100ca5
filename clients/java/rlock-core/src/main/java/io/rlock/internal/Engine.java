package io.rlock.internal;

import io.rlock.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.SessionSettings;
import io.rlock.internal.transport.Transport;
import io.rlock.internal.transport.RespError;

/**
 * What one {@link RLockClient} shares between its handles: the nodes and their sessions, the
 * waits, the holdings, the maintenance thread; and the command sequence of docs/clients.md.
 */
public final class Engine {
    /** Owner ids are {@code <id>:<thread id>}, Redisson-shaped. */
    public final String id = UUID.randomUUID().toString();
    private final RLockOptions options;
    /** Opens the sessions' connections and says which node a key goes to: the user's client's. */
    private final Transport transport;
    private final ScheduledThreadPoolExecutor executor;
    private final Holdings holdings;
    private final Dispatcher dispatcher;
    private final WaitByMessage waits;
    private final Router router;
    private final AsyncCalls async;
    private final ObjectEvents objectEvents;
    /** Confirmation of this engine's writes (a view made by {@link #with(Confirm)} has its own). */
    final Confirm confirm;
    private final java.util.concurrent.atomic.AtomicBoolean closed;

    /** An engine over {@code transport} (the user's client); closing the engine closes the transport. */
    public Engine(RLockOptions options, Transport transport) {
        this.options = options;
        this.transport = transport;
        this.confirm = options.confirm();
        this.closed = new java.util.concurrent.atomic.AtomicBoolean();
        this.executor = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "rlock-maintenance " + id);
            thread.setDaemon(true);
            return thread;
        });
        this.executor.setRemoveOnCancelPolicy(true);
        this.async = new AsyncCalls(id);
        this.objectEvents = new ObjectEvents(this, id, transport.database());
        this.holdings = new Holdings(this::background, options.nameMapper()::unmap);
        this.dispatcher = new Dispatcher(this);
        this.waits = new WaitByMessage(this, options.responseTimeout().toNanos());
        this.router = new Router(this, transport);
        try {
            router.nodeFor("").sessionWithin(connectTimeoutNanos());
            router.start();
        } catch (IOException e) {
            close();
            throw new RLockException("cannot connect to " + transport + ": " + e.getMessage(), e);
        }
        executor.scheduleWithFixedDelay(this::maintain, 1, 1, TimeUnit.SECONDS);
    }

    /** The same client (connections, holdings, owner ids) whose writes are confirmed as {@code confirm} says. */
    private Engine(Engine base, Confirm confirm) {
        this.options = base.options;
        this.transport = base.transport;
        this.executor = base.executor;
        this.holdings = base.holdings;
        this.dispatcher = base.dispatcher;
        this.waits = base.waits;
        this.router = base.router;
        this.async = base.async;
        this.objectEvents = base.objectEvents;
        this.closed = base.closed;
        this.confirm = confirm;
    }

    public Engine with(Confirm confirm) {
        return new Engine(this, confirm);
    }

    public RLockOptions options() {
        return options;
    }

    /** The key of the object the user calls {@code name} (through the options' {@link NameMapper}). */
    public String key(String name) {
        if (name == null) {
            throw new IllegalArgumentException("a name, not null");
        }
        return options.nameMapper().map(name);
    }

    /** The name the user gave the object whose key is {@code key}. */
    public String nameOf(String key) {
        return options.nameMapper().unmap(key);
    }

    /** A dedicated connection to {@code node}, named {@code clientName}, through the transport. */
    public Connection open(NodeAddress node, String clientName, Connection.Listener listener) throws IOException {
        return transport.open(new SessionSettings(node, listener, clientName, options.responseTimeout()));
    }

    /** What the sessions call themselves ({@code CLIENT SETNAME}): operators and tests find them by it. */
    String clientName() {
        return "rlock-java:" + id;
    }

    /** The database the sessions use (the keyspace channels name it). */
    public int database() {
        return transport.database();
    }

    public Holdings holdings() {
        return holdings;
    }

    public Dispatcher dispatcher() {
        return dispatcher;
    }

    ObjectEvents objectEvents() {
        return objectEvents;
    }

    WaitByMessage waits() {
        return waits;
    }

    public Router router() {
        return router;
    }

    boolean isClosed() {
        return closed.get();
    }

    long connectTimeoutNanos() {
        return options.connectTimeout().toNanos();
    }

    /** The calling thread's owner id. */
    public String owner() {
        return threadOwner.get();
    }

    /** The owner id of each thread, made once, not per call (issue 46: allocation per acquisition). */
    private final ThreadLocal<String> threadOwner = ThreadLocal.withInitial(() -> id + ":" + Thread.currentThread().getId());

    public String owner(long threadId) {
        return threadId == Thread.currentThread().getId() ? threadOwner.get() : id + ":" + threadId;
    }

    /**
     * A request id that no other call sends (docs/clients.md, step 9): this process's 128 random
     * bits, drawn once, then a count. As unique as a random UUID per call, without two
     * SecureRandom draws and a UUID per uncontended pair (the JFR profile in docs/benchmark.md).
     */
    static String requestId() {
        return REQUEST_PREFIX + Long.toHexString(REQUESTS.incrementAndGet());
    }

    private static final String REQUEST_PREFIX = randomHex(16) + ":";
    private static final java.util.concurrent.atomic.AtomicLong REQUESTS = new java.util.concurrent.atomic.AtomicLong();

    private static String randomHex(int bytes) {
        byte[] random = new byte[bytes];
        new java.security.SecureRandom().nextBytes(random);
        return java.util.HexFormat.of().formatHex(random);
    }

    /** {@code call} on a daemon thread of this client: the async API ({@link AsyncCalls}). */
    <T> java.util.concurrent.CompletableFuture<T> async(java.util.concurrent.Callable<T> call) {
        return async.submit(call);
    }

    void background(Runnable task) {
        try {
            executor.execute(() -> {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    // background work is best effort
                }
            });
        } catch (RejectedExecutionException e) {
            // closed
        }
    }

    private void maintain() {
        holdings.forgetExpired();
        router.maintain();
        Rebind.verifySuspects(this);
        for (Node node : router.nodes()) {
            if (closed.get()) {
                return;
            }
            try {
                node.maintain();
            } catch (RuntimeException e) {
                // next round
            }
        }
    }

    /**
     * Takes a lock, a read or write hold, or permits (docs/clients.md's sequence): returns the
     * fencing token, or -1 when not granted.
     *
     * @param leaseMs -1: {@code PX <watchdog lease> WATCHDOG}; else a plain lease
     * @param waitMs  -1: wait without a deadline; 0: one attempt; else wait at most that long
     * @param interruptible whether an interrupt ends the wait (leaving the queue) with
     *        {@link InterruptedException}; if not, the interrupt is kept for after the grant
     */
    public long acquire(Family family, String key, String owner, int permits, long leaseMs, long waitMs,
            boolean interruptible) throws InterruptedException {
        return acquire(family, key, owner, permits, leaseMs, waitMs, interruptible, 0);
    }

    /** As above, with {@code LOCKDELAY lockDelayMs} when it is above 0 (plain locks): the core's {@link Acquire}. */
    public long acquire(Family family, String key, String owner, int permits, long leaseMs, long waitMs,
            boolean interruptible, long lockDelayMs) throws InterruptedException {
        long[] tokens = Acquire.one(this, family, key, owner, permits, lockDelayMs).run(leaseMs, waitMs, interruptible);
        return tokens == null ? -1 : tokens[0];
    }

    /** The {@code PX} of an acquire: the watchdog's lease for -1 (any negative), else {@code leaseMs}. */
    long lease(long leaseMs) {
        return leaseMs < 0 ? Math.max(1, options.watchdogLease().toMillis()) : Math.max(1, leaseMs);
    }

    static boolean movable(String code) {
        return code != null && (code.equals("READONLY") || code.equals("MOVED") || code.equals("ASK")
                || code.equals("TRYAGAIN") || code.equals("CLUSTERDOWN"));
    }

    void releaseQuietly(Node node, Target target) {
        releaseQuietly(node, target, 1);
    }

    void releaseQuietly(Node node, Target target, int permits) {
        try {
            node.call(false, target.family().release(target.key(), target.owner(), permits, requestId()));
        } catch (RuntimeException e) {
            // best effort: the lease ends it otherwise
        }
    }

    /** {@code RSEM.RELEASEMANY key ANY owners...} on {@code node}, best effort (an undo: the leases end them otherwise). */
    void releaseManyQuietly(Node node, String key, List<String> owners) {
        try {
            node.call(false, Family.releaseMany(key, false, owners, requestId()));
        } catch (RuntimeException e) {
            // best effort
        }
    }

    /**
     * Gives back one hold (or {@code permits}): the server's remaining count, or -1 when the
     * owner held nothing there.
     */
    public long release(Family family, String key, String owner, int permits) {
        Target target = new Target(family, key, owner);
        long remaining = releasing(List.of(target), permits, () -> releaseWrite(confirm, key,
                family.release(key, owner, permits, requestId()), () -> "the release of " + family.type + " " + key, value -> {
                    Long left = value == null ? null : Replies.number(value, 0);
                    holdings.released(target, left);
                    return left == null ? -1L : left;
                }));
        objectEvents.settle(key);
        return remaining;
    }

    /**
     * {@code release} of {@code count} holds or permits of each of {@code targets}, marked as
     * under way until their holdings are updated: a re-bind answered "not held" meanwhile may have
     * seen this release rather than a loss ({@link Holdings#releasedMeanwhile}).
     */
    private <T> T releasing(List<Target> targets, long count, java.util.function.Supplier<T> release) {
        targets.forEach(target -> holdings.releaseSent(target, count));
        try {
            return release.get();
        } finally {
            targets.forEach(target -> holdings.releaseSent(target, -count));
        }
    }

    /**
     * {@code RSEM.RELEASEMANY key ID id ALL|ANY owners...}: how many owners gave back their
     * permits (a reply lost and the call re-sent: the first call's answer).
     * {@code all}: every owner held, or {@link RLockException} (the server's {@code not held:
     * <owner>}) and nothing changed.
     */
    long releaseMany(String key, List<String> owners, boolean all) {
        List<Target> targets = owners.stream().map(owner -> new Target(Family.PERMITS, key, owner)).toList();
        return releasing(targets, 1, () -> releaseWrite(confirm, key, Family.releaseMany(key, all, owners, requestId()),
                () -> "the release of permits " + key, value -> {
                    targets.forEach(target -> holdings.released(target, null));
                    return Replies.number(value, 0);
                }));
    }

    /** A write about {@code key} (its errors raised), confirmed by the replicas: else {@link NotConfirmedException}. */
    Object write(String key, Object... args) {
        try {
            return Replies.check(router.write(confirm, key, args).value());
        } catch (Unconfirmed e) {
            throw e.report(args[0] + " " + key, false);
        }
    }

    /**
     * {@code RLOCK.RELEASEALL} of {@code keys} for {@code owner}, in one step: the keys it did
     * not hold (each key's holding is updated).
     */
    public List<String> releaseAll(List<String> keys, String owner) {
        return releaseAll(keys, owner, confirm);
    }

    /** As above, confirmed as {@code confirm} says (null: not, as for an undo). */
    public List<String> releaseAll(List<String> keys, String owner, Confirm confirm) {
        List<Target> targets = keys.stream().map(key -> new Target(Family.LOCK, key, owner)).toList();
        return releasing(targets, 1, () -> releaseWrite(confirm, keys.get(0), Family.releaseAll(keys, owner, requestId()),
                () -> "the release of " + keys, reply -> {
            if (!(reply instanceof List) || ((List<?>) reply).size() != keys.size()) {
                throw new RLockException("ERR", "unexpected reply to RLOCK.RELEASEALL: " + text(reply));
            }
            List<?> counts = (List<?>) reply;
            List<String> notHeld = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                Object count = counts.get(i);
                if (count == null) {
                    notHeld.add(keys.get(i));
                }
                holdings.released(targets.get(i), count == null ? null : Replies.number(count, 0));
            }
            return notHeld;
        }));
    }

    /**
     * A release confirmed as {@code confirm} says: {@code recorded} reads the server's reply (its
     * errors raised) and updates the holdings; a release not confirmed stands on the primary, so
     * it is recorded before {@link NotConfirmedException} reports it.
     */
    private <T> T releaseWrite(Confirm confirm, String key, Object[] args, java.util.function.Supplier<String> what,
            java.util.function.Function<Object, T> recorded) {
        Object value;
        Unconfirmed unconfirmed = null;
        try {
            value = Replies.check(router.write(confirm, key, args).value());
        } catch (Unconfirmed e) {
            unconfirmed = e;
            value = e.reply;
        }
        T result = recorded.apply(value);
        if (unconfirmed != null) {
            throw unconfirmed.report(what.get(), false); // described only then: not per release (issue 46, allocation)
        }
        return result;
    }

    /** A call about {@code key} whose errors are raised. */
    public Object call(String key, Object... args) {
        return Replies.check(router.call(key, args).value());
    }

    Map<String, Object> info(String command, String key) {
        return Replies.map(call(key, command, key));
    }

    Node.Session session(Node node) {
        try {
            return node.sessionWithin(connectTimeoutNanos());
        } catch (IOException e) {
            if (closed.get()) {
                throw closedException();
            }
            throw new RLockException("cannot connect to " + node + ": " + e.getMessage(), e);
        }
    }

    static RLockException closedException() {
        return new RLockException("CLOSED", "the client is closed");
    }

    /** The System.nanoTime() end of a wait of {@code waitMs} (-1: Long.MAX_VALUE, none). */
    public static long deadline(long waitMs) {
        return waitMs < 0 ? Long.MAX_VALUE : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
    }

    /**
     * The {@code WAIT} argument of a call sent toward {@code deadline}: 0 (no limit) without one,
     * {@link Family#NO_WAIT} (one attempt) once it has passed, else the ms left rounded up.
     */
    static long waitArg(long deadline) {
        if (deadline == Long.MAX_VALUE) {
            return 0;
        }
        long left = deadline - System.nanoTime();
        return left <= 0 ? Family.NO_WAIT : ceilMillis(left);
    }

    /** The server waits at most a year; a longer wait is one without a deadline. */
    static long forever(long waitMs) {
        return waitMs > MAX_WAIT_MS ? -1 : waitMs;
    }

    static final long MAX_WAIT_MS = 31_536_000_000L;

    public static long ceilMillis(long nanos) {
        return Math.max(1, (nanos + 999_999) / 1_000_000);
    }

    static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void pause(long ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    public void close() {
        closed.set(true);
        dispatcher.closeAll();
        router.close();
        executor.shutdownNow();
        async.close();
        objectEvents.close();
    }

    /** An error reply's text, for messages. */
    public static String text(Object reply) {
        return reply instanceof RespError ? ((RespError) reply).message() : Replies.text(reply);
    }
}
