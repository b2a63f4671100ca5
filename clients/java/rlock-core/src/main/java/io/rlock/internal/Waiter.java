package io.rlock.internal;

import io.rlock.*;
import io.rlock.internal.transport.Connection;

/**
 * One thread's wait in a server queue, told its outcome by the dispatcher. A waiter with a
 * {@link #confirmation} has its grant confirmed by the session's I/O thread as the message is
 * read (C4.2's {@code RENEW}, written then on {@link #connection}), and wakes once, with the
 * confirmation's replies: not twice, for the message and then for the reply to its own
 * {@code RENEW} (the hot lock's hand-off, issue 46). Its waiting call may be written without
 * waiting for the reply ({@link #replied}): a {@code WAITING} reply then wakes nobody, so the
 * thread wakes once in all for a waited grant, not also for the call's reply.
 */
public final class Waiter {
    final Target target;
    final Node node;
    final long generation;
    /** System.nanoTime() deadline of the server's WAIT (Long.MAX_VALUE: none). */
    final long deadline;
    /** The commands that confirm a grant (null: the waiting thread confirms it), and where they go. */
    final Object[][] confirmation;
    final Connection connection;
    private Event outcome;
    /** The waiting call's reply when it was sent without waiting ({@link #NO_REPLY} until it comes). */
    private Object reply = NO_REPLY;
    /** The thread, interrupted while it waited for {@link #reply}, wants even a {@code WAITING} reply at once. */
    private boolean interruptedForReply;
    /** {@link #reply} before it comes; and what it is when the connection failed first. */
    static final Object NO_REPLY = new Object();
    static final Object FAILED = new Object();
    /** A grant told, its confirmation on the wire: already the outcome for {@link #outcome()}, not yet for {@link #await}. */
    private Event delivered;

    Waiter(Target target, Node node, long generation, long deadline) {
        this(target, node, generation, deadline, null, null);
    }

    Waiter(Target target, Node node, long generation, long deadline, Object[][] confirmation, Connection connection) {
        this.target = target;
        this.node = node;
        this.generation = generation;
        this.deadline = deadline;
        this.confirmation = confirmation;
        this.connection = connection;
    }

    /** The first outcome wins; returns whether this one was taken. */
    synchronized boolean complete(Event event) {
        if (outcome != null) {
            return false;
        }
        outcome = event;
        notifyAll();
        return true;
    }

    /**
     * A grant whose confirmation is being written: from now on {@link #outcome()} (the
     * dispatcher's unregister, a cancel's check) sees the grant; {@link #await} returns once
     * {@link #complete} brings it with the confirmation's replies.
     */
    synchronized void delivered(Event grant) {
        delivered = grant;
    }

    synchronized Event outcome() {
        return outcome != null ? outcome : delivered;
    }

    /**
     * The reply to the waiting call sent by {@link PinnedCall#sendWaiting} ({@link #FAILED}: the
     * connection failed first). A {@code WAITING} reply wakes nobody: the thread waits on for the
     * outcome, which this waiter brings.
     */
    synchronized void replied(Object reply) {
        this.reply = reply;
        if (!"WAITING".equals(reply) || interruptedForReply) {
            notifyAll();
        }
    }

    /**
     * Waits for the waiting call's reply, through interrupts (as a call's reply is awaited, {@link
     * io.rlock.internal.transport.AwaitingConnection}; each noted in {@code interrupted[0]}), for
     * at most {@code nanos}: a reply other than {@code WAITING}; else {@code WAITING} once an outcome
     * came, or on an interrupt with the {@code WAITING} reply in hand, or at the end of {@code nanos}
     * with it; {@link #FAILED}; {@link #NO_REPLY} when none came within {@code nanos}.
     */
    synchronized Object awaitReply(long nanos, boolean[] interrupted) {
        long end = System.nanoTime() + nanos;
        while (true) {
            if (reply != NO_REPLY && !"WAITING".equals(reply)) {
                return reply;
            }
            if (outcome != null || reply != NO_REPLY && interrupted[0]) {
                return "WAITING";
            }
            long left = end - System.nanoTime();
            if (left <= 0) {
                return reply;
            }
            try {
                wait(left / 1_000_000, (int) (left % 1_000_000));
            } catch (InterruptedException e) {
                interrupted[0] = true;
                interruptedForReply = true;
            }
        }
    }

    /** The outcome, or null after {@code nanos}. */
    synchronized Event await(long nanos) throws InterruptedException {
        long end = nanos == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + nanos;
        while (outcome == null) {
            if (end == Long.MAX_VALUE) {
                wait();
            } else {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                wait(left / 1_000_000, (int) (left % 1_000_000));
            }
        }
        return outcome;
    }
}
