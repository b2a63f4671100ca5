package io.rlock.internal;

import io.rlock.*;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.stream.Collectors;

/**
 * The holdings of one client's threads, for their tokens, re-binding after a reconnect and
 * reporting losses to the {@link LockLostListener}s.
 */
public final class Holdings {
    private final Map<Target, Holding> byTarget = new ConcurrentHashMap<>();
    /** The holds or permits of releases sent whose reply is not yet accounted for, per target. */
    private final Map<Target, Long> releasing = new ConcurrentHashMap<>();
    private final List<LockLostListener> listeners = new CopyOnWriteArrayList<>();
    private final Executor callbacks;
    /** A key to the name the user gave it ({@link NameMapper#unmap}), for the reports. */
    private final java.util.function.UnaryOperator<String> nameOfKey;

    Holdings(Executor callbacks, java.util.function.UnaryOperator<String> nameOfKey) {
        this.callbacks = callbacks;
        this.nameOfKey = nameOfKey;
    }

    public void addListener(LockLostListener listener) {
        listeners.add(listener);
    }

    public void removeListener(LockLostListener listener) {
        listeners.remove(listener);
    }

    Holding get(Target target) {
        return byTarget.get(target);
    }

    /**
     * A grant of {@code count} holds or permits with {@code token}. A lock's grant with the token
     * of the holding already known adds to it (re-entry); another token replaces it (the old
     * one ended unseen: it is reported lost). Permits add up, under the latest grant's token.
     */
    void granted(Target target, Node node, long token, boolean watchdog, long leaseMs, long count) {
        Holding[] replaced = new Holding[1];
        byTarget.compute(target, (key, known) -> {
            if (known != null && !known.isLost()) {
                if (target.family() == Family.PERMITS) {
                    return new Holding(target, node, token, watchdog, leaseMs, known.count + count);
                }
                if (known.token == token) {
                    known.count += count;
                    if (!watchdog) {
                        known.expires = System.nanoTime() + leaseMs * 1_000_000L;
                    }
                    return known;
                }
                replaced[0] = known;
            }
            return new Holding(target, node, token, watchdog, leaseMs, count);
        });
        if (replaced[0] != null) {
            lost(replaced[0]);
        }
    }

    /** The server's count after a release; 0 (or null: nothing held) forgets the holding. */
    void released(Target target, Long remaining) {
        if (remaining == null || remaining == 0) {
            byTarget.remove(target);
        } else {
            byTarget.computeIfPresent(target, (key, known) -> {
                known.count = remaining;
                return known;
            });
        }
    }

    /**
     * A release of {@code count} holds or permits of {@code target} is about to be sent; a
     * negative count: its reply is accounted for ({@link #released}), or it failed.
     */
    void releaseSent(Target target, long count) {
        releasing.compute(target, (key, sent) -> {
            long now = (sent == null ? 0 : sent) + count;
            return now > 0 ? now : null;
        });
    }

    /**
     * Whether a re-bind's "not held" for {@code holding} is explained by the client itself:
     * releases of all it holds were sent (the server may have done them before the re-bind's
     * {@code RENEW}, on the same connection, while their replies are not yet read), or it is no
     * longer the holding known for its target (released, or moved to another node and re-bound
     * there). A release of part of it explains nothing: the rest was lost.
     */
    boolean releasedMeanwhile(Holding holding) {
        return releasing.getOrDefault(holding.target, 0L) >= holding.count || !isCurrent(holding);
    }

    /** A plain lease set anew ({@code updateLeaseTime}). */
    void renewed(Target target, long leaseMs) {
        Holding known = byTarget.get(target);
        if (known != null && !known.watchdog) {
            known.expires = System.nanoTime() + leaseMs * 1_000_000L;
        }
    }

    /** Forgets the holdings whose plain lease has passed (a second of margin for clock rates). */
    void forgetExpired() {
        long now = System.nanoTime();
        byTarget.values().removeIf(h -> h.expires != Long.MAX_VALUE && now - h.expires > 1_000_000_000L);
    }

    public int size() {
        return byTarget.size();
    }

    /** A {@code lost} message: the holding with that token ended other than by its release. */
    void lostMessage(Target target, long token) {
        Holding known = byTarget.get(target);
        if (known != null && known.token == token) {
            lost(known);
        }
    }

    void lost(Holding holding) {
        if (holding.markLost()) {
            LostLock lost = new LostLock(nameOfKey.apply(holding.target.key()), holding.target.family().type,
                    holding.target.owner(), holding.token);
            for (LockLostListener listener : listeners) {
                callbacks.execute(() -> listener.lockLost(lost));
            }
        }
    }

    /** The live watchdog holdings taken on {@code node}: to be re-bound after a reconnect. */
    List<Holding> watchdogHoldings(Node node) {
        return byTarget.values().stream()
                .filter(h -> h.node == node && h.watchdog && !h.isLost())
                .collect(Collectors.toList());
    }

    /** The holdings a re-bind found missing, to be checked on their key's primary ({@link Rebind#verifySuspects}). */
    List<Holding> suspects() {
        return byTarget.values().stream().filter(h -> h.suspectedAt != 0 && !h.isLost()).collect(Collectors.toList());
    }

    /** Whether {@code holding} is still the one known for its target (not released, moved or replaced). */
    boolean isCurrent(Holding holding) {
        return byTarget.get(holding.target) == holding;
    }

    /** A suspect found held and bound on {@code node}: it lives there now, suspected no more. */
    void rebound(Holding holding, Node node) {
        byTarget.computeIfPresent(holding.target, (target, h) -> h != holding ? h
                : new Holding(target, node, h.token, h.watchdog, h.leaseMs, h.count, h.expires));
    }

    /** A failover: the holdings taken on {@code from} now live on {@code to} (to be re-bound there). */
    void move(Node from, Node to) {
        byTarget.replaceAll((target, h) -> h.node != from ? h
                : new Holding(target, to, h.token, h.watchdog, h.leaseMs, h.count, h.expires));
    }

    /** Whether a live holding is on another node than {@code nodeFor} names for its key (a failover moved it). */
    boolean misplaced(java.util.function.Function<String, Node> nodeFor) {
        return byTarget.values().stream().anyMatch(h -> !h.isLost() && h.node != nodeFor.apply(h.target.key()));
    }

    /** Every holding whose key {@code nodeFor} sends elsewhere moves there; the nodes it moved to. */
    java.util.Set<Node> rehome(java.util.function.Function<String, Node> nodeFor) {
        java.util.Set<Node> to = java.util.concurrent.ConcurrentHashMap.newKeySet();
        byTarget.replaceAll((target, h) -> {
            Node node = nodeFor.apply(target.key());
            if (h.node == node || h.isLost()) {
                return h;
            }
            to.add(node);
            return new Holding(target, node, h.token, h.watchdog, h.leaseMs, h.count, h.expires);
        });
        return to;
    }
}
