package io.rlock.internal;

import io.rlock.*;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import io.rlock.internal.transport.Push;

/**
 * The dispatcher of {@code NOTIFY} messages: every waiting thread registers here before it
 * sends its waiting call, and the reader thread of the session hands each message to the
 * waiter it names (type, key, owner; the oldest such waiter on that session), marks holdings
 * lost on {@code lost}, and ends the waits of a session that dropped.
 */
public final class Dispatcher {
    private final Map<Target, List<Waiter>> waiters = new HashMap<>();
    private final Engine engine;

    Dispatcher(Engine engine) {
        this.engine = engine;
    }

    synchronized Waiter register(Target target, Node node, long generation, long deadline) {
        return register(new Waiter(target, node, generation, deadline));
    }

    /** As above, the grant confirmed by {@code confirmation} on {@code session}'s connection as its message is read. */
    Waiter register(Target target, Node.Session session, long deadline, Object[][] confirmation) {
        return register(new Waiter(target, session.node(), session.generation, deadline, confirmation, session.conn));
    }

    private synchronized Waiter register(Waiter waiter) {
        waiters.computeIfAbsent(waiter.target, t -> new ArrayList<>()).add(waiter);
        return waiter;
    }

    /**
     * Takes the waiter out; no message reaches it afterwards. Returns what reached it before
     * (null: nothing).
     */
    synchronized Event unregister(Waiter waiter) {
        if (waiter == null) {
            return null;
        }
        List<Waiter> queue = waiters.get(waiter.target);
        if (queue != null) {
            queue.remove(waiter);
            if (queue.isEmpty()) {
                waiters.remove(waiter.target);
            }
        }
        return waiter.outcome();
    }

    /** Called by the reader thread of {@code node}'s session {@code generation}, for each push. */
    void push(Node node, long generation, Push push) {
        byte[] payload = push.payload();
        if (payload == null || engine.objectEvents().push(push)) {
            return;
        }
        Message message = Message.parse(payload);
        if (message == null) {
            return;
        }
        Family family = Family.ofType(message.type);
        if (family == null) {
            return;
        }
        Target target = new Target(family, message.key, message.owner);
        Event event;
        switch (message.event) {
            case "granted":
                event = Event.granted(message.token());
                break;
            case "timeout":
                event = Event.TIMEOUT;
                break;
            case "failed":
                event = Event.failed(message.value);
                break;
            case "lost":
                engine.holdings().lostMessage(target, message.token());
                return;
            default:
                return;
        }
        boolean claimed = deliver(node, generation, target, event);
        if (!claimed && event.kind == Event.Kind.GRANTED && family != Family.LATCH && family != Family.PERMITS) {
            // A grant whose waiter is gone (it should not happen: a waiter that gives up takes
            // its entry out first); unless it is a holding this client knows, give it back.
            Holding known = engine.holdings().get(target);
            if (known == null || known.token != event.token) {
                // A counting grant's value is its permits, nobody's token.
                int permits = family == Family.COUNTING ? (int) event.token : 1;
                engine.background(() -> engine.releaseQuietly(node, target, permits));
            }
        }
    }

    private boolean deliver(Node node, long generation, Target target, Event event) {
        Waiter chosen = null;
        synchronized (this) {
            List<Waiter> queue = waiters.get(target);
            if (queue == null) {
                return false;
            }
            for (Waiter waiter : queue) {
                if (waiter.node != node || waiter.generation != generation) {
                    continue;
                }
                if (target.family() == Family.LATCH && event.kind == Event.Kind.TIMEOUT) {
                    // Latch waits share one target: the server's timeouts come in deadline order.
                    if (chosen == null || waiter.deadline < chosen.deadline) {
                        chosen = waiter;
                    }
                } else {
                    chosen = waiter;
                    break;
                }
            }
            if (chosen == null) {
                return false;
            }
            queue.remove(chosen);
            if (queue.isEmpty()) {
                waiters.remove(target);
            }
            if (event.kind != Event.Kind.GRANTED || chosen.confirmation == null) {
                chosen.complete(event);
                return true;
            }
            // Seen as granted by whoever takes it out from now on (a cancel gives it back).
            chosen.delivered(event);
        }
        confirm(chosen, event);
        return true;
    }

    /**
     * Writes the grant's confirmation now, on the I/O thread reading its message, and wakes the
     * waiter with its replies; written before any later call of this connection, so a cancel's
     * reply finds the waiter told. Not written (the connection cannot, or failed): the waiter
     * wakes with the grant alone and confirms it itself.
     */
    private static void confirm(Waiter waiter, Event grant) {
        java.util.concurrent.CompletionStage<List<Object>> sent;
        try {
            sent = waiter.connection.send(waiter.confirmation);
        } catch (RuntimeException e) {
            sent = null;
        }
        if (sent == null) {
            waiter.complete(grant);
            return;
        }
        sent.whenComplete((replies, failure) -> waiter.complete(failure == null ? grant.confirmedBy(replies) : grant));
    }

    /** The session {@code generation} of {@code node} dropped: its waits are gone from the server. */
    void disconnected(Node node, long generation) {
        List<Waiter> ended = new ArrayList<>();
        synchronized (this) {
            for (Iterator<List<Waiter>> queues = waiters.values().iterator(); queues.hasNext(); ) {
                List<Waiter> queue = queues.next();
                for (Iterator<Waiter> it = queue.iterator(); it.hasNext(); ) {
                    Waiter waiter = it.next();
                    if (waiter.node == node && waiter.generation <= generation) {
                        it.remove();
                        ended.add(waiter);
                    }
                }
                if (queue.isEmpty()) {
                    queues.remove();
                }
            }
        }
        ended.forEach(waiter -> waiter.complete(Event.DISCONNECTED));
    }

    /** The client closed: every wait ends. */
    void closeAll() {
        List<Waiter> ended = new ArrayList<>();
        synchronized (this) {
            waiters.values().forEach(ended::addAll);
            waiters.clear();
        }
        ended.forEach(waiter -> waiter.complete(Event.CLOSED));
    }

    /** Waits registered (abandoned latch waits included): for tests and diagnostics. */
    public synchronized int size() {
        return waiters.values().stream().mapToInt(List::size).sum();
    }
}
