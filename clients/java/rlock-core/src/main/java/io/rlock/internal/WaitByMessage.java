package io.rlock.internal;

import io.rlock.*;

import java.io.IOException;

/**
 * Wait by message ({@code NOTIFY}): a waiting thread registers a {@link Waiter} with the
 * {@link Dispatcher}, sends its call naming its session, and parks until the message that ends
 * its wait. With no message by the deadline plus the response timeout, or on an interrupt, the
 * wait leaves the queue ({@code RLOCK.CANCEL}); a grant that raced the cancel is given back.
 */
public final class WaitByMessage {
    private final Engine engine;
    /** How long past its deadline a wait still expects its message, in ns. */
    private final long slackNanos;

    WaitByMessage(Engine engine, long slackNanos) {
        this.engine = engine;
        this.slackNanos = slackNanos;
    }

    /**
     * Parks the thread until its wait's message (see the class comment); {@code giveBack} undoes
     * a grant that raced an interrupt's cancel.
     */
    Event park(Waiter waiter, Node.Session session, boolean interruptible, long deadline,
            boolean[] interrupted, Runnable giveBack) throws InterruptedException {
        while (true) {
            long left = deadline == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - System.nanoTime() + slackNanos;
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
                    giveBack.run();
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
        Event event = engine.dispatcher().unregister(waiter);
        return event != null ? event : Event.TIMEOUT;
    }

    /**
     * After an event that is neither a grant nor a timeout: true when the call is to be sent
     * again (its session dropped; a failover or a moved slot, after a pause and asking the
     * Router again); otherwise it throws.
     */
    boolean retry(Event event, PinnedCall call, boolean interruptible, boolean[] interrupted, String what)
            throws InterruptedException {
        switch (event.kind) {
            case DISCONNECTED:
                if (engine.router().followsFailovers()) {
                    // A failover may have moved the key: a latch wait (a read) sent again to a
                    // demoted primary would be accepted there, and never told.
                    call.reroute();
                }
                return true; // sent again with the same request id
            case CLOSED:
                throw Engine.closedException();
            default:
                if (!Engine.movable(event.code)) {
                    throw new RLockException(event.code, "the wait for " + what + " failed: " + event.code);
                }
                try {
                    Engine.pause(100);
                } catch (InterruptedException e) {
                    if (interruptible) {
                        throw e;
                    }
                    interrupted[0] = true;
                }
                call.reroute();
                return true;
        }
    }

    /** Waits for a latch to open: true when open, false at the timeout. {@code waitMs} -1: no limit. */
    boolean awaitLatch(String key, long waitMs) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        waitMs = Engine.forever(waitMs);
        Target target = new Target(Family.LATCH, key, "");
        long deadline = Engine.deadline(waitMs);
        PinnedCall call = new PinnedCall(engine, key);
        boolean[] interrupted = {false};
        while (true) {
            Node.Session session = call.session();
            long left = deadline == Long.MAX_VALUE ? 0 : deadline - System.nanoTime();
            if (deadline != Long.MAX_VALUE && left <= 0) {
                return Long.valueOf(1).equals(engine.call(key, Family.LATCH.await(key, Family.NO_WAIT, 0)));
            }
            long waitArg = deadline == Long.MAX_VALUE ? 0 : Engine.ceilMillis(left);
            Waiter waiter = engine.dispatcher().register(target, call.node, session.generation, deadline);
            Object reply = call.send(session, java.util.List.of(waiter), Family.LATCH.await(key, waitArg, session.notifyId));
            if (reply == PinnedCall.RESEND) {
                continue;
            }
            if ("WAITING".equals(reply)) {
                // An interrupted or overdue latch wait stays registered, abandoned: latch waits
                // share one target, so its own message must still find it (and not another's).
                long wait = deadline == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - System.nanoTime() + slackNanos;
                Event event = wait <= 0 ? null : waiter.await(wait);
                if (event == null || event.kind == Event.Kind.TIMEOUT) {
                    return false;
                }
                if (event.kind == Event.Kind.GRANTED) {
                    return true;
                }
                if (retry(event, call, true, interrupted, "latch " + key)) {
                    continue;
                }
            }
            engine.dispatcher().unregister(waiter);
            if (call.follow(reply)) {
                continue;
            }
            return Long.valueOf(1).equals(Replies.check(reply));
        }
    }
}
