package io.rlock.internal;

import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.NodeAddress;

import io.rlock.*;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;

/**
 * One server (one master of a cluster) as this client uses it: a session of the client's own
 * that every call and every wait of every thread shares.
 *
 * <p>RESP3: one connection, subscribed to its {@code __rlock__} channel, runs the calls and
 * receives the {@code NOTIFY} messages. RESP2 (a server that refuses {@code HELLO 3}): a
 * command connection and a subscriber connection, named in {@code NOTIFY <id>}. Watchdog
 * holdings are bound to the session; after it drops, a new one re-binds them
 * ({@code RENEW ... PX lease WATCHDOG}, {@link Rebind}) before any call runs on it, and those the server no
 * longer knows are reported lost. The client's maintenance thread {@code PING}s it every third
 * of {@code rlock.watchdog-idle-ms}.
 */
public final class Node {
    public final NodeAddress address;
    private final Engine engine;
    private Session session;
    private long generation;
    /** When the server last answered (System.nanoTime()). */
    private volatile long lastContact = System.nanoTime();
    private volatile long pingIntervalNanos = TimeUnit.SECONDS.toNanos(10);
    private boolean pingIntervalKnown;
    /** The replicas connected to it, for {@link Confirm#auto()}. */
    private final Replicas replicas = new Replicas();

    /** One connection (RESP3), or a command and a subscriber connection (RESP2). */
    final class Session {
        final Connection conn;
        final Connection sub;
        final long generation;
        /** What {@code NOTIFY} names: {@link Family#NOTIFY_SELF}, or the subscriber's id. */
        final long notifyId;

        Session(Connection conn, Connection sub, long generation, long notifyId) {
            this.conn = conn;
            this.sub = sub;
            this.generation = generation;
            this.notifyId = notifyId;
        }

        boolean isOpen() {
            return conn.isOpen() && (sub == null || sub.isOpen());
        }

        void close() {
            conn.close();
            if (sub != null) {
                sub.close();
            }
        }

        /**
         * Once this returns, every message the server published before it answered the calls
         * made so far on {@link #conn} has been dispatched: the subscriber's {@code PING}
         * answers after them (RESP3: the messages share the command connection already).
         */
        void barrier() throws IOException {
            if (sub != null) {
                sub.call("PING");
            }
        }

        Node node() {
            return Node.this;
        }
    }

    Node(Engine engine, NodeAddress address) {
        this.engine = engine;
        this.address = address;
    }

    /** The live session, opening (and re-binding) a new one when there is none. */
    Session session() throws IOException {
        synchronized (this) {
            if (engine.isClosed()) {
                throw new IOException("the client is closed");
            }
            if (session != null && session.isOpen()) {
                return session;
            }
            if (session != null) {
                session.close();
            }
            Session fresh = open(++generation);
            try {
                Rebind.holdings(engine, this, fresh);
            } catch (IOException | RuntimeException e) {
                fresh.close();
                throw e;
            }
            session = fresh;
            replicas.invalidate();
            lastContact = System.nanoTime();
            return fresh;
        }
    }

    /** {@link #session()}, trying again until the connect timeout has passed. */
    Session sessionWithin(long timeoutNanos) throws IOException {
        long end = System.nanoTime() + timeoutNanos;
        while (true) {
            try {
                return session();
            } catch (RespServerException e) {
                throw e;
            } catch (IOException e) {
                if (engine.isClosed() || System.nanoTime() - end >= 0) {
                    throw e;
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /**
     * One call on this node: a connection failure sends the same command (with its same request
     * id) once more on a new connection; a second failure raises {@link RLockException}. An
     * error reply is returned as a {@link RespError}. With {@code confirm}, a write pipelined
     * with its confirmation ({@link #exchange}); not confirmed: {@link Unconfirmed}.
     */
    Object call(boolean asking, Confirm confirm, Object... args) {
        IOException failure = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            Session s;
            try {
                s = sessionWithin(engine.connectTimeoutNanos());
            } catch (IOException e) {
                failure = e;
                break;
            }
            Object[] exchange;
            try {
                exchange = exchange(s, asking, confirm, args);
                lastContact = System.nanoTime();
            } catch (IOException e) {
                failure = e;
                s.close();
                continue;
            }
            // Described only when there is a confirmation to report on (not per call: issue 46, allocation).
            return settle(exchange, confirm, exchange[1] == null ? null : args.length > 1 ? args[0] + " " + args[1] : String.valueOf(args[0]));
        }
        throw new RLockException("no reply from " + address + " to " + args[0]
                + (failure != null ? ": " + failure.getMessage() : ""), failure);
    }

    Object call(boolean asking, Object... args) {
        return call(asking, null, args);
    }

    /**
     * {@code args} (after {@code ASKING} when {@code asking}) on {@code s}, pipelined with the
     * {@code WAIT} of {@code confirm} when there are replicas to wait for: {reply, the WAIT
     * command or null, its reply}.
     */
    Object[] exchange(Session s, boolean asking, Confirm confirm, Object[] args) throws IOException {
        Object[] wait = confirmation(s, confirm);
        if (wait == null) {
            return new Object[] {asking ? s.conn.callAsking(args) : s.conn.call(args), null, null};
        }
        List<Object> replies = asking ? s.conn.pipeline(new Object[] {"ASKING"}, args, wait) : s.conn.pipeline(args, wait);
        if (asking && replies.get(0) instanceof RespError) {
            return new Object[] {replies.get(0), null, null};
        }
        return new Object[] {replies.get(replies.size() - 2), wait, replies.get(replies.size() - 1)};
    }

    /**
     * The {@code WAIT} (or {@code WAITAOF}) of {@code confirm} that a write on {@code s} is
     * pipelined with now, or null when there are no replicas to wait for.
     */
    Object[] confirmation(Session s, Confirm confirm) throws IOException {
        if (confirm != null && confirm.aof) {
            replicas.requireAof(s.conn);
        }
        return confirm == null || confirm.off ? null : confirm.command(confirm.replicas == Confirm.AUTO ? replicas.count(s.conn) : 0);
    }

    /** The live session when it is still {@code generation}'s (null: it dropped or was replaced since). */
    synchronized Session current(long generation) {
        return session != null && session.generation == generation && session.isOpen() ? session : null;
    }

    /**
     * The reply of an {@link #exchange}, once its confirmation is checked: a reply that wrote
     * nothing (nil, an error, {@code WAITING}) needs none. Not confirmed: {@link Unconfirmed}
     * carrying the reply (and the replica count is read again next time). {@code what} (the call,
     * for the report) may be null when there is no confirmation.
     */
    Object settle(Object[] exchange, Confirm confirm, String what) {
        Object reply = exchange[0];
        if (exchange[1] == null || reply == null || reply instanceof RespError || "WAITING".equals(reply)) {
            return reply;
        }
        try {
            confirm.settle((Object[]) exchange[1], exchange[2], what);
        } catch (Unconfirmed e) {
            replicas.invalidate();
            e.reply = reply;
            throw e;
        }
        return reply;
    }

    /** Whether a write here now waits for replicas under {@code confirm}. */
    boolean confirms(Confirm confirm) {
        if (confirm == null || confirm.off) {
            return false;
        }
        try {
            return confirm.command(confirm.replicas == Confirm.AUTO ? replicas.count(sessionWithin(engine.connectTimeoutNanos()).conn) : 0) != null;
        } catch (IOException e) {
            return true;
        }
    }

    private Session open(long gen) throws IOException {
        SessionListener listener = new SessionListener(gen);
        Connection conn = engine.open(address, engine.clientName(), listener);
        try {
            learnPingInterval(conn);
            if (conn.protocol() == 3) {
                subscribe(conn);
                engine.objectEvents().subscribe(conn);
                return new Session(conn, null, gen, Family.NOTIFY_SELF);
            }
            Connection sub = engine.open(address, engine.clientName(), listener);
            try {
                subscribe(sub);
                engine.objectEvents().subscribe(sub);
                return new Session(conn, sub, gen, sub.clientId());
            } catch (IOException | RuntimeException e) {
                sub.close();
                throw e;
            }
        } catch (IOException | RuntimeException e) {
            conn.close();
            throw e;
        }
    }

    /** Subscribes to the connection's own NOTIFY channel. */
    private static void subscribe(Connection conn) throws IOException {
        String channel = channel(conn);
        try {
            conn.subscribe(channel);
        } catch (RespServerException e) {
            throw new RespServerException("SUBSCRIBE " + channel + " (waiting needs the channel: ACL &__rlock__:*)", e.reply());
        }
    }

    private static String channel(Connection conn) throws IOException {
        Object reply = conn.call("RLOCK.CHANNEL");
        if (!(reply instanceof byte[]) && !(reply instanceof String)) {
            throw new RespServerException("RLOCK.CHANNEL (is the rlock module loaded, and the channel"
                    + " &__rlock__:* allowed to this user?)", reply);
        }
        return Replies.text(reply);
    }

    /** A third of the server's {@code rlock.watchdog-idle-ms} (10 s when it cannot be read). */
    private void learnPingInterval(Connection conn) throws IOException {
        if (pingIntervalKnown) {
            return;
        }
        Object reply = conn.call("CONFIG", "GET", "rlock.watchdog-idle-ms");
        Object value = null;
        if (reply instanceof Map) {
            value = ((Map<?, ?>) reply).get("rlock.watchdog-idle-ms");
        } else if (reply instanceof List && ((List<?>) reply).size() == 2) {
            value = ((List<?>) reply).get(1);
        }
        try {
            long idle = Long.parseLong(Replies.text(value));
            if (idle > 0) {
                pingIntervalNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(100, idle / 3));
            }
        } catch (NumberFormatException e) {
            // keep the default
        }
        pingIntervalKnown = true;
    }

    /** After a failover moved holdings here: re-binds them on the session (or reports them lost). */
    void adopt() {
        try {
            Session s = sessionWithin(engine.connectTimeoutNanos());
            synchronized (this) {
                Rebind.holdings(engine, this, s);
            }
        } catch (IOException | RuntimeException e) {
            close(); // the next session re-binds them
        }
    }

    /** Whether its session is open. */
    synchronized boolean isUp() {
        return session != null && session.isOpen();
    }

    /** The maintenance thread's visit: keep-alive {@code PING}s, or a reconnect when needed. */
    void maintain() {
        Session s;
        synchronized (this) {
            s = session;
        }
        if (s == null || !s.isOpen()) {
            if (s != null && !engine.holdings().watchdogHoldings(this).isEmpty()) {
                try {
                    session();
                } catch (IOException | RuntimeException e) {
                    Rebind.silent(engine, this, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lastContact));
                }
            }
            return;
        }
        long now = System.nanoTime();
        try {
            if (now - s.conn.lastWriteNanos() >= pingIntervalNanos) {
                s.conn.call("PING");
                lastContact = System.nanoTime();
            }
            if (s.sub != null && now - s.sub.lastWriteNanos() >= pingIntervalNanos) {
                s.sub.call("PING");
            }
        } catch (IOException e) {
            s.close();
        }
    }

    /** Reconnects at once after a drop when watchdog holdings need re-binding. */
    private void dropped(long gen) {
        Session s;
        synchronized (this) {
            s = session;
        }
        if (s != null && s.generation == gen) {
            s.close();
        }
        engine.dispatcher().disconnected(this, gen);
        if (!engine.isClosed() && !engine.holdings().watchdogHoldings(this).isEmpty()) {
            engine.background(this::maintain);
        }
    }

    void close() {
        Session s;
        synchronized (this) {
            s = session;
            session = null;
        }
        if (s != null) {
            s.close();
        }
    }

    private final class SessionListener implements Connection.Listener {
        private final long gen;

        SessionListener(long gen) {
            this.gen = gen;
        }

        @Override
        public void push(Connection connection, Push push) {
            engine.dispatcher().push(Node.this, gen, push);
        }

        @Override
        public void closed(Connection connection, IOException cause) {
            dropped(gen);
        }
    }

    @Override
    public String toString() {
        return address.toString();
    }
}
