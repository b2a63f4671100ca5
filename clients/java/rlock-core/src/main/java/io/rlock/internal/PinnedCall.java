package io.rlock.internal;

import io.rlock.*;

import java.io.IOException;

/**
 * A waiting call about one key, pinned to the session its waiters were registered for (not
 * {@link Router#call}, which may pick any connection): it follows the {@link Router}'s
 * {@code MOVED}/{@code ASK} redirections and is re-sent once, with its same request id, on a
 * new session when the connection breaks (the retry rule).
 */
public final class PinnedCall {
    /** What {@link #send} returns when the call is to be sent again on a new connection. */
    static final Object RESEND = new Object();

    private final Engine engine;
    private final String key;
    Node node;
    /** Whether the latest call was sent after {@code ASKING}. */
    boolean asked;
    private boolean asking;
    private int redirects;
    private int failures;

    PinnedCall(Engine engine, String key) {
        this.engine = engine;
        this.key = key;
        this.node = engine.router().nodeFor(key);
    }

    /**
     * The reply to {@code args} on {@code session}, or {@link #RESEND} when its connection
     * broke (its waiters are then unregistered: the server dropped their entries with it).
     */
    Object send(Node.Session session, Iterable<Waiter> waiters, Object[] args) {
        return send(session, waiters, args, null);
    }

    /**
     * As above, an acquire pipelined with its confirmation ({@link Node#exchange}): granted at
     * once and not confirmed, {@link Unconfirmed}.
     */
    Object send(Node.Session session, Iterable<Waiter> waiters, Object[] args, Confirm confirm) {
        Object[] exchange;
        try {
            exchange = node.exchange(session, asking, confirm, args);
        } catch (IOException e) {
            waiters.forEach(engine.dispatcher()::unregister);
            session.close();
            if (++failures > 1) {
                throw new RLockException("no reply from " + node + " to " + args[0] + ": " + e.getMessage(), e);
            }
            return RESEND;
        }
        failures = 0;
        asked = asking;
        asking = false;
        return node.settle(exchange, confirm, exchange[1] == null ? null : args[0] + " " + key);
    }

    /**
     * As {@link #send}, a waiting call without replicas to wait for ({@code waiter} has its grant
     * confirmed by the I/O thread, {@link Waiter#confirmation}), written without waiting for its
     * reply: a {@code WAITING} reply wakes nobody and this returns {@code WAITING} once the
     * waiter's outcome is there (or on an interrupt, or after the response timeout), so that a
     * waited grant wakes the thread once (issue 46: the hot lock's hand-off on 2 loaded cores).
     * Any other reply is returned as {@link #send} returns it; none within the response timeout,
     * or a failed connection, is the connection's failure, as for a call. A connection that
     * cannot send so, or replicas to wait for since the waiter was registered: {@link #send}.
     */
    Object sendWaiting(Node.Session session, Waiter waiter, Object[] args, Confirm confirm, long responseTimeoutNanos) {
        java.util.concurrent.CompletionStage<java.util.List<Object>> sent = null;
        try {
            if (node.confirmation(session, confirm) == null) { // as send would: nothing to pipeline now either
                sent = session.conn.send(args);
            }
        } catch (IOException e) {
            // send meets it
        }
        if (sent == null) {
            return send(session, java.util.List.of(waiter), args, confirm);
        }
        sent.whenComplete((replies, failure) -> waiter.replied(failure == null ? replies.get(0) : Waiter.FAILED));
        boolean[] interrupted = {false};
        Object reply = waiter.awaitReply(responseTimeoutNanos, interrupted);
        if (interrupted[0]) {
            Thread.currentThread().interrupt();
        }
        if (reply == Waiter.NO_REPLY || reply == Waiter.FAILED) {
            engine.dispatcher().unregister(waiter);
            session.close(); // as a call's missing reply closes its connection: later replies could not be matched
            IOException e = new IOException(reply == Waiter.FAILED ? "the connection failed"
                    : "no reply within " + java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(responseTimeoutNanos) + " ms");
            if (++failures > 1) {
                throw new RLockException("no reply from " + node + " to " + args[0] + ": " + e.getMessage(), e);
            }
            return RESEND;
        }
        failures = 0;
        asked = false;
        return reply;
    }

    /** The session to send on; Sentinel: the new primary's when this node cannot be reached. */
    Node.Session session() {
        try {
            return engine.session(node);
        } catch (RLockException e) {
            if (!engine.router().followsFailovers()) {
                throw e;
            }
            node = engine.router().recover(node, key);
            return engine.session(node);
        }
    }

    /** Whether {@code reply} sent the call to another node, which is then the one to send to. */
    boolean follow(Object reply) {
        if (engine.router().isCluster() && reply instanceof io.rlock.internal.transport.RespError error
                && error.code().matches("CLUSTERDOWN|TRYAGAIN")) {
            // A failover under way: no node serves the slot for a moment (seen: a latch await
            // in ClusterFailoverTest answered CLUSTERDOWN); as Router.call, wait and ask again.
            if (++redirects > Router.MAX_REDIRECTS) {
                throw new RLockException(error.code(), "the cluster did not serve " + key + " within "
                        + Router.MAX_REDIRECTS + " tries");
            }
            Engine.sleepQuietly(500);
            node = engine.router().nodeFor(key);
            asking = false;
            return true;
        }
        if (engine.router().followsFailovers() && reply instanceof io.rlock.internal.transport.RespError error && error.code().equals("READONLY")) {
            if (++redirects > Router.MAX_REDIRECTS) {
                throw new RLockException("READONLY", "no primary would take the call for " + key);
            }
            node = engine.router().recover(node, key); // a failover: the same call on the new primary
            asking = false;
            return true;
        }
        Node next = engine.router().redirect(node, key, reply);
        if (next == null) {
            return false;
        }
        if (++redirects > Router.MAX_REDIRECTS) {
            throw new RLockException("CLUSTER", "more than " + Router.MAX_REDIRECTS + " redirections for " + key);
        }
        node = next;
        asking = ((io.rlock.internal.transport.RespError) reply).code().equals("ASK");
        return true;
    }

    /** Whether the next call is sent after {@code ASKING}. */
    boolean asking() {
        return asking;
    }

    /** After a {@code failed} event that a retry may fix (a failover, a slot moving): ask the Router again. */
    void reroute() {
        node = engine.router().nodeFor(key);
    }
}
