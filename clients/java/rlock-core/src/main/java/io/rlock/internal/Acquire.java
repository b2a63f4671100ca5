package io.rlock.internal;

import io.rlock.*;

import io.rlock.internal.transport.RespError;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The acquire step of docs/clients.md, the one core for every type: one key
 * ({@code <PREFIX>.ACQUIRE}), all-or-none over several ({@code RLOCK.ACQUIREALL}, a
 * {@link MultiLock}), or n permit ids at once ({@code RSEM.ACQUIRE ... EACH}: n holdings of one
 * permit, one request in the queue). One attempt, or a wait by message ({@link WaitByMessage}); a
 * grant told by message is confirmed ({@code RENEW}, with {@code WATCHDOG} for a watchdog grant)
 * before it counts; every grant is recorded in the {@link Holdings}.
 */
public final class Acquire {
    private final Engine engine;
    private final Family family;
    /** One key, or a multi-lock's keys (in the order of their tokens). */
    private final List<String> keys;
    private final boolean all;
    private final String owner;
    private final int permits;
    /**
     * The owners of the holdings a grant makes, on the first key: the request's owner, or with
     * {@code EACH} its n permit ids (a multi-lock's are {@link #owner} on every key).
     */
    private final List<String> holders;
    private final boolean each;
    /** {@code LOCKDELAY} in ms (0: none; plain locks only). */
    private final long lockDelayMs;

    private Acquire(Engine engine, Family family, List<String> keys, boolean all, String owner, int permits,
            boolean each, long lockDelayMs) {
        this.engine = engine;
        this.family = family;
        this.keys = keys;
        this.all = all;
        this.owner = owner;
        this.permits = permits;
        this.each = each;
        this.holders = each ? Family.eachOwners(owner, permits) : List.of(owner);
        this.lockDelayMs = lockDelayMs;
    }

    static Acquire one(Engine engine, Family family, String key, String owner, int permits, long lockDelayMs) {
        return new Acquire(engine, family, List.of(key), false, owner, permits, false, lockDelayMs);
    }

    public static Acquire all(Engine engine, List<String> keys, String owner, long lockDelayMs) {
        return new Acquire(engine, Family.LOCK, keys, true, owner, 1, false, lockDelayMs);
    }

    /** {@code permits} permit ids at once: {@code <base>:1} to {@code <base>:<permits>} ({@link #holders()}). */
    static Acquire each(Engine engine, String key, String base, int permits) {
        return new Acquire(engine, Family.PERMITS, List.of(key), false, base, permits, true, 0);
    }

    /** The owners a grant makes holders of the first key. */
    List<String> holders() {
        return holders;
    }

    private Object[] args(long lease, boolean watchdog, long waitArg, long notifyId, String requestId) {
        if (all) {
            return Family.acquireAll(keys, owner, lease, watchdog, waitArg, notifyId, requestId, lockDelayMs);
        }
        return each
                ? family.acquireEach(keys.get(0), owner, permits, lease, watchdog, waitArg, notifyId, requestId)
                : family.acquire(keys.get(0), owner, permits, lease, watchdog, waitArg, notifyId, requestId, lockDelayMs);
    }

    /** The holdings a grant makes: one per key (a multi-lock's), or one per holder of the first key. */
    private List<Target> targets() {
        if (!all && !each) {
            return List.of(new Target(family, keys.get(0), owner));
        }
        List<Target> targets = new ArrayList<>(all ? keys.size() : holders.size());
        if (all) {
            keys.forEach(key -> targets.add(new Target(family, key, owner)));
        } else {
            holders.forEach(holder -> targets.add(new Target(family, keys.get(0), holder)));
        }
        return targets;
    }

    /** Gives back, best effort, what the request for {@code key} was granted on {@code node}. */
    private void giveBack(Node node, String key) {
        if (each) {
            engine.releaseManyQuietly(node, key, holders);
        } else {
            engine.releaseQuietly(node, new Target(family, key, owner), permits);
        }
    }

    /**
     * The fencing tokens (one per key), or null when not granted.
     *
     * @param leaseMs -1: {@code PX <watchdog lease> WATCHDOG}; else a plain lease
     * @param waitMs  -1: wait without a deadline; 0: one attempt; else wait at most that long
     * @param interruptible whether an interrupt ends the wait (leaving the queue) with
     *        {@link InterruptedException}; if not, the interrupt is kept for after the grant
     */
    public long[] run(long leaseMs, long waitMs, boolean interruptible) throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        waitMs = Engine.forever(waitMs);
        boolean watchdog = leaseMs < 0;
        long lease = engine.lease(leaseMs);
        String requestId = Engine.requestId();
        String first = keys.get(0);
        if (waitMs == 0) {
            Router.Reply reply;
            try {
                reply = engine.router().write(engine.confirm, first, args(lease, watchdog, Family.NO_WAIT, 0, requestId));
            } catch (Unconfirmed e) {
                throw undo(e.node, e);
            }
            return granted(reply.node(), reply.value(), watchdog, lease);
        }
        long deadline = Engine.deadline(waitMs);
        PinnedCall call = new PinnedCall(engine, first);
        boolean[] interrupted = {false};
        try {
            while (true) {
                Node.Session session = call.session();
                long waitArg = Engine.waitArg(deadline);
                boolean over = waitArg == Family.NO_WAIT;
                List<Waiter> waiters = over ? List.of() : register(call, session, deadline, lease, watchdog);
                Object reply;
                Object[] args = args(lease, watchdog, waitArg, session.notifyId, requestId);
                try {
                    // Confirmed by the I/O thread, with no WAIT to pipeline: the reply need not wake us.
                    reply = waiters.size() == 1 && waiters.get(0).confirmation != null && waiters.get(0).confirmation.length == 1
                            ? call.sendWaiting(session, waiters.get(0), args, engine.confirm, engine.options().responseTimeout().toNanos())
                            : call.send(session, waiters, args, engine.confirm);
                } catch (Unconfirmed e) {
                    drop(waiters, 0); // granted at once: no message comes
                    throw undo(call.node, e);
                }
                if (reply == PinnedCall.RESEND) {
                    continue; // the same call, with its same request id, on a new connection
                }
                if ("WAITING".equals(reply)) {
                    Event event;
                    try {
                        Node node = call.node;
                        event = engine.waits().park(waiters.get(0), session, interruptible, deadline, interrupted,
                                () -> giveBack(node, keys.get(0)));
                    } catch (InterruptedException e) {
                        drop(waiters, 1); // the cancel took the whole request out; a raced grant is given back
                        throw e;
                    }
                    if (event.kind == Event.Kind.GRANTED) {
                        long[] tokens = tokens(event, waiters);
                        // Every grant told by message, watchdog or lease, with or without replicas to
                        // wait for: its lease may have ended before the message was read (C4.2).
                        if (!confirm(call.node, call.asked, lease, watchdog, waiters.get(0), event)) {
                            requestId = Engine.requestId(); // it ended before we could confirm it: ask again
                            continue;
                        }
                        record(call.node, tokens, watchdog, lease);
                        return tokens;
                    }
                    drop(waiters, 1);
                    if (event.kind == Event.Kind.TIMEOUT) {
                        return null;
                    }
                    if (engine.waits().retry(event, call, interruptible, interrupted, keys.toString())) {
                        continue;
                    }
                }
                drop(waiters, 0);
                if (call.follow(reply)) {
                    continue;
                }
                return granted(call.node, reply, watchdog, lease);
            }
        } finally {
            if (interrupted[0]) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** One waiter per key: the server tells a multi-key wait by one message per key. */
    private List<Waiter> register(PinnedCall call, Node.Session session, long deadline, long lease, boolean watchdog) {
        Object[][] confirmation = pipelinedConfirmation(call, session, lease, watchdog);
        if (confirmation != null) {
            return List.of(engine.dispatcher().register(new Target(family, keys.get(0), owner), session, deadline, confirmation));
        }
        List<Waiter> waiters = new ArrayList<>(keys.size());
        for (String key : keys) {
            waiters.add(engine.dispatcher().register(new Target(family, key, owner), call.node, session.generation, deadline));
        }
        return waiters;
    }

    /**
     * What confirms this wait's grant (C4.2: the {@code RENEW}, pipelined with the replicas'
     * {@code WAIT} as a call now would be), for the session's I/O thread to write as the grant's
     * message is read, so that the waiting thread wakes once, confirmed (issue 46: the hot lock's
     * hand-off is a message and a reply shorter). For one holding of one key, on a RESP3 session
     * (the messages come on the connection the confirmation goes to), not after {@code ASKING}.
     * Null: the woken thread confirms ({@link #confirm}).
     */
    private Object[][] pipelinedConfirmation(PinnedCall call, Node.Session session, long lease, boolean watchdog) {
        if (all || each || session.sub != null || call.asking()) {
            return null;
        }
        Object[] wait;
        try {
            wait = call.node.confirmation(session, engine.confirm);
        } catch (IOException e) {
            return null; // the call on this session meets it
        }
        Object[] renew = family.renew(keys.get(0), owner, lease, watchdog);
        return wait == null ? new Object[][] {renew} : new Object[][] {renew, wait};
    }

    /**
     * The confirmation written as the grant was read, in {@link Node#exchange}'s shape, when it
     * stands for the one this thread would send now: its reply is no error (a redirection or a
     * failover is followed by a call), its session is still the node's (from now on a drop
     * re-binds this holding with the others, once recorded), and the replicas it waited for are
     * those a write now waits for (they are counted again at most once a second). Null: confirm
     * by a call.
     */
    private Object[] pipelined(Node node, Waiter waiter, Event grant) {
        List<Object> replies = grant.confirmation;
        if (waiter.confirmation == null || replies == null || replies.get(0) instanceof RespError) {
            return null;
        }
        Node.Session session = node.current(waiter.generation);
        if (session == null) {
            return null;
        }
        Object[] wait = waiter.confirmation.length > 1 ? waiter.confirmation[1] : null;
        try {
            if (!java.util.Arrays.equals(wait, node.confirmation(session, engine.confirm))) {
                return null;
            }
        } catch (IOException e) {
            return null; // the call meets the connection's state
        }
        return new Object[] {replies.get(0), wait, wait == null ? null : replies.get(1)};
    }

    /** Unregisters the waiters from {@code from} on; a grant that reached one is given back. */
    private void drop(List<Waiter> waiters, int from) {
        for (Waiter waiter : waiters.subList(Math.min(from, waiters.size()), waiters.size())) {
            Event told = engine.dispatcher().unregister(waiter);
            if (told != null && told.kind == Event.Kind.GRANTED) {
                giveBack(waiter.node, waiter.target.key());
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
            engine.dispatcher().unregister(waiters.get(i));
            if (event == null || event.kind != Event.Kind.GRANTED) {
                throw new RLockException("ERR", "the grant of " + keys + " came without a token for every key");
            }
            tokens[i] = event.token;
        }
        return tokens;
    }

    /**
     * Confirm: a grant told by message was written by another connection, so this one's
     * {@code WAIT} would not cover it (Redis 8.2, Valkey: a connection's WAIT counts from its
     * own last propagated command). {@code RENEW} writes (PEXPIREAT) on this connection, and the
     * last key's is pipelined with the replicas' confirmation; a watchdog grant also starts its
     * renewals once {@code RENEW ... WATCHDOG} binds it (docs/notify.md). When one ended
     * meanwhile, the rest of an all-or-none grant is given back, and the caller asks again.
     * Not confirmed: undone, {@link NotConfirmedException}.
     */
    private boolean confirm(Node node, boolean asking, long lease, boolean watchdog, Waiter first, Event grant) {
        List<Target> targets = targets();
        for (int i = 0; i < targets.size(); i++) {
            Target target = targets.get(i);
            String key = target.key();
            Confirm confirm = i == targets.size() - 1 ? engine.confirm : null;
            Object[] pipelined = i == 0 ? pipelined(node, first, grant) : null;
            Object reply;
            try {
                reply = pipelined != null ? node.settle(pipelined, confirm, "RENEW " + key)
                        : engine.router().call(node, asking, confirm, key, family.renew(key, target.owner(), lease, watchdog)).value();
            } catch (Unconfirmed e) {
                if (Long.valueOf(1).equals(e.reply)) {
                    throw undo(node, e);
                }
                reply = e.reply;
            }
            if (!Long.valueOf(1).equals(Replies.check(reply))) {
                if (all) {
                    engine.releaseAll(keys, owner, null);
                } else if (each) {
                    engine.releaseManyQuietly(node, key, holders);
                }
                return false;
            }
        }
        return true;
    }

    /** An acquisition not confirmed in time: given back (one hold, or the permits), and reported. */
    private NotConfirmedException undo(Node node, Unconfirmed unconfirmed) {
        if (all) {
            engine.releaseAll(keys, owner, null);
        } else {
            giveBack(node, keys.get(0));
        }
        return unconfirmed.report("the acquisition of " + family.type + " " + (all ? keys : keys.get(0)), true);
    }

    /** A call's answer to an acquire: the tokens (recorded), null for nil; errors raised. */
    private long[] granted(Node node, Object reply, boolean watchdog, long lease) {
        if (reply == null) {
            return null;
        }
        long[] tokens;
        if (!all && reply instanceof Long) {
            tokens = new long[] {(Long) reply};
        } else if (all && reply instanceof List<?> list && list.size() == keys.size()) {
            tokens = list.stream().mapToLong(token -> Replies.number(token, -1)).toArray();
        } else {
            Replies.check(reply);
            throw new RLockException("ERR", "unexpected reply to " + (all ? "RLOCK.ACQUIREALL" : "an acquire") + ": " + Engine.text(reply));
        }
        record(node, tokens, watchdog, lease);
        return tokens;
    }

    /** Every holding of the grant; with {@code EACH} each holds one permit, under the grant's one token. */
    private void record(Node node, long[] tokens, boolean watchdog, long lease) {
        List<Target> targets = targets();
        for (int i = 0; i < targets.size(); i++) {
            engine.holdings().granted(targets.get(i), node, tokens[all ? i : 0], watchdog, lease, each ? 1 : permits);
        }
    }
}
