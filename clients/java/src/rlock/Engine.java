package rlock;

import java.io.IOException;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import rlock.resp.Cluster;
import rlock.resp.RedisUri;
import rlock.resp.RespConnection;
import rlock.resp.RespError;

/**
 * What one {@link RLockClient} shares between its handles: the nodes and their sessions, the
 * waits, the holdings, the maintenance thread; and the command sequence of docs/clients.md.
 */
final class Engine {
    /** Owner ids are {@code <id>:<thread id>}, Redisson-shaped. */
    final String id = UUID.randomUUID().toString();
    private final RLockOptions options;
    private final RespConnection.Settings settings;
    private final ScheduledThreadPoolExecutor executor;
    private final Holdings holdings;
    private final Hub hub;
    private final Router router;
    private volatile boolean closed;

    Engine(RedisUri uri, RLockOptions options) {
        this.options = options;
        this.settings = new RespConnection.Settings().uri(uri, options.sslSocketFactory)
                .verifyHostname(options.verifyHostname).protocol(options.protocol)
                .connectTimeout(options.connectTimeout).responseTimeout(options.responseTimeout)
                .clientName("rlock-java:" + id);
        this.executor = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "rlock-maintenance " + id);
            thread.setDaemon(true);
            return thread;
        });
        this.executor.setRemoveOnCancelPolicy(true);
        this.holdings = new Holdings(this::background);
        this.hub = new Hub(this);
        this.router = new Router(this, uri.host, uri.port);
        try {
            router.seed().sessionWithin(connectTimeoutNanos());
        } catch (IOException e) {
            close();
            throw new RLockException("cannot connect to " + uri + ": " + e.getMessage(), e);
        }
        executor.scheduleWithFixedDelay(this::maintain, 1, 1, TimeUnit.SECONDS);
    }

    RespConnection.Settings settings() {
        return settings;
    }

    Holdings holdings() {
        return holdings;
    }

    Hub hub() {
        return hub;
    }

    Router router() {
        return router;
    }

    boolean isClosed() {
        return closed;
    }

    long connectTimeoutNanos() {
        return options.connectTimeout.toNanos();
    }

    /** The calling thread's owner id. */
    String owner() {
        return owner(Thread.currentThread().getId());
    }

    String owner(long threadId) {
        return id + ":" + threadId;
    }

    static String requestId() {
        return UUID.randomUUID().toString();
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
        for (Node node : router.nodes()) {
            if (closed) {
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
    long acquire(Family family, String key, String owner, int permits, long leaseMs, long waitMs,
            boolean interruptible) throws InterruptedException {
        return acquire(family, key, owner, permits, leaseMs, waitMs, interruptible, 0);
    }

    /** As above, with {@code LOCKDELAY lockDelayMs} when it is above 0 (plain locks). */
    long acquire(Family family, String key, String owner, int permits, long leaseMs, long waitMs,
            boolean interruptible, long lockDelayMs) throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        waitMs = forever(waitMs);
        boolean watchdog = leaseMs < 0;
        long lease = lease(leaseMs);
        Target target = new Target(family, key, owner);
        String requestId = requestId();
        if (waitMs == 0) {
            Router.Reply reply = router.call(key,
                    family.acquire(key, owner, permits, lease, watchdog, Family.NO_WAIT, 0, requestId, lockDelayMs));
            return granted(target, reply.node(), reply.value(), watchdog, lease, permits);
        }
        long deadline = deadline(waitMs);
        Route route = new Route(key);
        boolean[] interrupted = {false};
        try {
            while (true) {
                Node.Session session = session(route.node);
                long left = deadline == Long.MAX_VALUE ? 0 : deadline - System.nanoTime();
                boolean over = deadline != Long.MAX_VALUE && left <= 0;
                long waitArg = deadline == Long.MAX_VALUE ? 0 : over ? Family.NO_WAIT : ceilMillis(left);
                Waiter waiter = over ? null : hub.register(target, route.node, session.generation, deadline);
                Object[] args = family.acquire(key, owner, permits, lease, watchdog, waitArg, session.notifyId, requestId, lockDelayMs);
                Object reply = route.send(session, waiter, args);
                if (reply == Route.RESEND) {
                    continue;
                }
                if ("WAITING".equals(reply)) {
                    Event event = park(waiter, session, interruptible, deadline, interrupted, permits);
                    switch (event.kind) {
                        case GRANTED:
                            if (watchdog && !confirm(route.node, route.asked, target, lease)) {
                                requestId = requestId(); // it ended before we could confirm it: ask again
                                continue;
                            }
                            holdings.granted(target, route.node, event.token, watchdog, lease, permits);
                            return event.token;
                        case TIMEOUT:
                            return -1;
                        case DISCONNECTED:
                            continue; // sent again with the same request id
                        case CLOSED:
                            throw closedException();
                        case FAILED:
                        default:
                            if (movable(event.code)) {
                                try {
                                    pause(100);
                                } catch (InterruptedException e) {
                                    if (interruptible) {
                                        throw e;
                                    }
                                    interrupted[0] = true;
                                }
                                route.node = router.nodeFor(key);
                                continue;
                            }
                            throw new RLockException(event.code, "the wait for " + key + " failed: " + event.code);
                    }
                }
                hub.unregister(waiter);
                if (route.follow(reply)) {
                    continue;
                }
                return granted(target, route.node, reply, watchdog, lease, permits);
            }
        } finally {
            if (interrupted[0]) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The {@code PX} of an acquire: the watchdog's lease for -1 (any negative), else {@code leaseMs}. */
    long lease(long leaseMs) {
        return leaseMs < 0 ? Math.max(1, options.watchdogLease.toMillis()) : Math.max(1, leaseMs);
    }

    static boolean movable(String code) {
        return code != null && (code.equals("READONLY") || code.equals("MOVED") || code.equals("ASK")
                || code.equals("TRYAGAIN") || code.equals("CLUSTERDOWN"));
    }

    /** A call's answer to an acquire: the token (recorded), -1 for nil; errors raised. */
    private long granted(Target target, Node node, Object reply, boolean watchdog, long lease, int permits) {
        if (reply == null) {
            return -1;
        }
        if (reply instanceof Long) {
            long token = (Long) reply;
            holdings.granted(target, node, token, watchdog, lease, permits);
            return token;
        }
        Replies.check(reply);
        throw new RLockException("ERR", "unexpected reply to an acquire: " + RespConnection.text(reply));
    }

    /** A watchdog grant told by message starts its renewals once confirmed (docs/notify.md). */
    boolean confirm(Node node, boolean asking, Target target, long lease) {
        Object reply = router.call(node, asking, target.key(),
                target.family().renew(target.key(), target.owner(), lease, true)).value();
        return Long.valueOf(1).equals(Replies.check(reply));
    }

    /**
     * Parks the thread until its wait's message. With no message by the deadline plus the
     * response timeout, or on an interrupt, the wait leaves the queue ({@code RLOCK.CANCEL}).
     */
    Event park(Waiter waiter, Node.Session session, boolean interruptible, long deadline,
            boolean[] interrupted, int permits) throws InterruptedException {
        long slack = options.responseTimeout.toNanos();
        while (true) {
            long left = deadline == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - System.nanoTime() + slack;
            if (left <= 0) {
                return cancel(waiter, session);
            }
            try {
                Event event = waiter.await(left);
                if (event != null) {
                    return event;
                }
            } catch (InterruptedException e) {
                if (!interruptible) {
                    interrupted[0] = true;
                    continue;
                }
                Event event = cancel(waiter, session);
                if (event.kind == Event.Kind.GRANTED) {
                    // The grant raced the cancel: nobody will use it.
                    Target target = waiter.target;
                    releaseQuietly(waiter.node, target, permits);
                }
                throw e;
            }
        }
    }

    /**
     * Takes the waiter's entry out of the server's queue and then its registration here: a
     * grant that raced the cancel has reached the waiter by the time the cancel's reply (and
     * the barrier, for RESP2's separate subscriber) came back, and is returned.
     */
    private Event cancel(Waiter waiter, Node.Session session) {
        try {
            if (session.isOpen()) {
                session.conn.call("RLOCK.CANCEL", waiter.target.key(), waiter.target.owner());
                session.barrier();
            }
        } catch (IOException e) {
            // the session dropped: its queue entries went with it
        }
        Event event = hub.unregister(waiter);
        return event != null ? event : Event.TIMEOUT;
    }

    void releaseQuietly(Node node, Target target) {
        releaseQuietly(node, target, 1);
    }

    private void releaseQuietly(Node node, Target target, int permits) {
        try {
            node.call(false, target.family().release(target.key(), target.owner(), permits, requestId()));
        } catch (RuntimeException e) {
            // best effort: the lease ends it otherwise
        }
    }

    /**
     * Gives back one hold (or {@code permits}): the server's remaining count, or -1 when the
     * owner held nothing there.
     */
    long release(Family family, String key, String owner, int permits) {
        Target target = new Target(family, key, owner);
        Router.Reply reply = router.call(key, family.release(key, owner, permits, requestId()));
        Object value = Replies.check(reply.value());
        if (value == null) {
            holdings.released(target, null);
            return -1;
        }
        long remaining = Replies.number(value, 0);
        holdings.released(target, remaining);
        return remaining;
    }

    /** Waits for a latch to open: true when open, false at the timeout. {@code waitMs} -1: no limit. */
    boolean awaitLatch(String key, long waitMs) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        waitMs = forever(waitMs);
        Target target = new Target(Family.LATCH, key, "");
        long deadline = deadline(waitMs);
        Route route = new Route(key);
        while (true) {
            Node.Session session = session(route.node);
            long left = deadline == Long.MAX_VALUE ? 0 : deadline - System.nanoTime();
            if (deadline != Long.MAX_VALUE && left <= 0) {
                return Long.valueOf(1).equals(Replies.check(router.call(key, Family.LATCH.await(key, Family.NO_WAIT, 0)).value()));
            }
            long waitArg = deadline == Long.MAX_VALUE ? 0 : ceilMillis(left);
            Waiter waiter = hub.register(target, route.node, session.generation, deadline);
            Object reply = route.send(session, waiter, Family.LATCH.await(key, waitArg, session.notifyId));
            if (reply == Route.RESEND) {
                continue;
            }
            if ("WAITING".equals(reply)) {
                long slack = options.responseTimeout.toNanos();
                // An interrupted or overdue latch wait stays registered, abandoned: latch waits
                // share one target, so its own message must still find it (and not another's).
                long wait = deadline == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - System.nanoTime() + slack;
                Event event = wait <= 0 ? null : waiter.await(wait);
                if (event == null) {
                    return false;
                }
                switch (event.kind) {
                    case GRANTED:
                        return true;
                    case TIMEOUT:
                        return false;
                    case DISCONNECTED:
                        continue;
                    case CLOSED:
                        throw closedException();
                    default:
                        if (movable(event.code)) {
                            pause(100);
                            route.node = router.nodeFor(key);
                            continue;
                        }
                        throw new RLockException(event.code, "the wait for latch " + key + " failed: " + event.code);
                }
            }
            hub.unregister(waiter);
            if (route.follow(reply)) {
                continue;
            }
            return Long.valueOf(1).equals(Replies.check(reply));
        }
    }

    /**
     * Where a waiting call about one key goes next. Not {@link Router#call}: a waiting call must
     * go on the session its waiter was registered for, and is re-sent only once on a new one.
     */
    private final class Route {
        /** What {@link #send} returns when the call is to be sent again on a new connection. */
        static final Object RESEND = new Object();

        private final String key;
        Node node;
        /** Whether the latest call was sent after {@code ASKING}. */
        boolean asked;
        private boolean asking;
        private int redirects;
        private int failures;

        Route(String key) {
            this.key = key;
            this.node = router.nodeFor(key);
        }

        /**
         * The reply to {@code args} on {@code session}, or {@link #RESEND} when its connection
         * broke: the call goes once more, with its same request id, on a new connection.
         */
        Object send(Node.Session session, Waiter waiter, Object[] args) {
            Object reply;
            try {
                reply = asking ? session.conn.callAsking(args) : session.conn.call(args);
            } catch (IOException e) {
                hub.unregister(waiter);
                session.close();
                if (++failures > 1) {
                    throw new RLockException("no reply from " + node + " to " + args[0] + ": " + e.getMessage(), e);
                }
                return RESEND;
            }
            failures = 0;
            asked = asking;
            asking = false;
            return reply;
        }

        /** Whether {@code reply} sent the call to another node, which is then the one to send to. */
        boolean follow(Object reply) {
            Cluster.Redirect redirect = router.redirect(node, reply);
            if (redirect == null) {
                return false;
            }
            if (++redirects > Router.MAX_REDIRECTS) {
                throw new RLockException("CLUSTER", "more than " + Router.MAX_REDIRECTS + " redirections for " + key);
            }
            node = router.node(redirect.host, redirect.port);
            asking = redirect.ask;
            return true;
        }
    }

    /** A call about {@code key} whose errors are raised. */
    Object call(String key, Object... args) {
        return Replies.check(router.call(key, args).value());
    }

    Map<String, Object> info(String command, String key) {
        return Replies.map(call(key, command, key));
    }

    Node.Session session(Node node) {
        try {
            return node.sessionWithin(connectTimeoutNanos());
        } catch (IOException e) {
            if (closed) {
                throw closedException();
            }
            throw new RLockException("cannot connect to " + node + ": " + e.getMessage(), e);
        }
    }

    static RLockException closedException() {
        return new RLockException("CLOSED", "the client is closed");
    }

    /** The System.nanoTime() end of a wait of {@code waitMs} (-1: Long.MAX_VALUE, none). */
    private static long deadline(long waitMs) {
        return waitMs < 0 ? Long.MAX_VALUE : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
    }

    /** The server waits at most a year; a longer wait is one without a deadline. */
    static long forever(long waitMs) {
        return waitMs > MAX_WAIT_MS ? -1 : waitMs;
    }

    static final long MAX_WAIT_MS = 31_536_000_000L;

    static long ceilMillis(long nanos) {
        return Math.max(1, (nanos + 999_999) / 1_000_000);
    }

    static void pause(long ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    void close() {
        closed = true;
        hub.closeAll();
        router.close();
        executor.shutdownNow();
    }

    /** An error reply's text, for messages. */
    static String text(Object reply) {
        return reply instanceof RespError ? ((RespError) reply).message() : RespConnection.text(reply);
    }
}
