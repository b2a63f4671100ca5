package io.rlock.internal;

import io.rlock.*;

import java.util.ArrayList;
import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import io.rlock.internal.resp.Cluster;
import io.rlock.internal.resp.RespError;

/**
 * Which node a key's call goes to. A standalone server is the one node; in Redis Cluster the
 * slots learnt from {@code MOVED} replies send later calls straight to their node, and
 * {@code ASK} sends one call, after {@code ASKING}, to the node importing the slot.
 */
public final class Router {
    /** A reply and the node that gave it. */
    record Reply(Node node, Object value) {
    }

    static final int MAX_REDIRECTS = 5;

    private final Engine engine;
    /** The server (Sentinel: the primary now, which changes with a failover). */
    private volatile Node seed;
    /** Sentinel discovery, or null. */
    private final Sentinels sentinels;
    /** How long a call waits for a failover to end (the sentinels to name a new primary). */
    static final long FAILOVER_TIMEOUT_NANOS = 60_000_000_000L;
    private final ConcurrentHashMap<String, Node> nodes = new ConcurrentHashMap<>();
    private final AtomicReferenceArray<Node> slots = new AtomicReferenceArray<>(Cluster.SLOTS);
    private volatile boolean cluster;

    Router(Engine engine, String host, int port) {
        this.engine = engine;
        this.sentinels = null;
        this.seed = node(host, port);
    }

    /** Sentinel: the primary the sentinels name now. */
    Router(Engine engine, Sentinels sentinels) {
        this.engine = engine;
        this.sentinels = sentinels;
        String[] primary = sentinels.primary();
        if (primary == null) {
            throw new RLockException("SENTINEL", "no sentinel of " + sentinels + " names a primary (last: "
                    + sentinels.lastFailure() + ")");
        }
        this.seed = node(primary[0], Integer.parseInt(primary[1]));
    }

    /**
     * After {@code failed} failed a call (no connection, {@code READONLY}): the primary to use
     * now. Sentinel: asks the sentinels until they name a primary that answers as one (within
     * {@link #FAILOVER_TIMEOUT_NANOS}); on a new primary, the watchdog holdings move there and
     * are re-bound ({@code RENEW ... WATCHDOG}) or reported lost. Otherwise: {@code failed}.
     */
    Node recover(Node failed) {
        return recover(failed, null);
    }

    /** As above; Cluster: reads the slots again until {@code key}'s has another primary than {@code failed}. */
    Node recover(Node failed, String key) {
        if (sentinels == null) {
            return cluster && key != null ? ClusterSlots.recover(this, engine, failed, key) : failed;
        }
        synchronized (this) {
            if (seed != failed) {
                return seed; // another thread switched already
            }
            long end = System.nanoTime() + FAILOVER_TIMEOUT_NANOS;
            while (!engine.isClosed() && System.nanoTime() - end < 0) {
                String[] named = sentinels.primary();
                if (named != null) {
                    Node node = node(named[0], Integer.parseInt(named[1]));
                    if (node != failed && isPrimary(node)) {
                        seed = node;
                        engine.holdings().move(failed, node);
                        failed.close();
                        node.adopt();
                        return node;
                    }
                    if (node == failed && isPrimary(node)) {
                        return node;
                    }
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            throw new RLockException("SENTINEL", "no primary of " + sentinels + " after " + failed + " failed");
        }
    }

    /**
     * The node that is {@code key}'s primary now as the topology itself says (the slot map read
     * again, or the sentinels asked) and answers {@code ROLE} as a primary; null when none does yet.
     */
    Node primaryNow(String key) {
        Node node;
        if (sentinels != null) {
            String[] named = sentinels.primary();
            node = named == null ? null : node(named[0], Integer.parseInt(named[1]));
        } else {
            node = cluster && !ClusterSlots.refresh(this, engine) ? null : nodeFor(key);
        }
        return node != null && isPrimary(node) ? node : null;
    }

    private static boolean isPrimary(Node node) {
        try {
            Object role = node.call(false, "ROLE");
            return role instanceof java.util.List<?> list && !list.isEmpty()
                    && "master".equals(io.rlock.internal.resp.RespConnection.text(list.get(0)));
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * Sentinel, on the maintenance thread every second: when the sentinels name another primary
     * (a failover that no call of ours noticed yet), switches to it: the old node's session is
     * closed, so its waiters re-join the new primary's queue and its observers follow.
     */
    void maintain() {
        if (sentinels == null) {
            if (cluster) {
                ClusterSlots.refresh(this, engine);
            }
            return;
        }
        Node primary = seed;
        String[] named = sentinels.primary();
        if (named != null && node(named[0], Integer.parseInt(named[1])) != primary
                || !primary.isUp() && !engine.holdings().watchdogHoldings(primary).isEmpty()) {
            recover(primary);
        }
    }

    boolean isSentinel() {
        return sentinels != null;
    }

    /** After the seed answered: in Redis Cluster, the whole slot map at once. */
    void start() {
        if (sentinels == null && seed.call(false, "CLUSTER", "SLOTS") instanceof java.util.List<?> ranges && !ranges.isEmpty()) {
            ClusterSlots.refresh(this, engine);
        }
    }

    /** Whether it follows failovers (Sentinel, or Cluster once a redirection showed one). */
    public boolean followsFailovers() {
        return sentinels != null || cluster;
    }

    public boolean isCluster() {
        return cluster;
    }

    /** Cluster: {@code slot}'s primary is {@code node} now. */
    void assign(int slot, Node node) {
        slots.set(slot, node);
        cluster = true;
    }

    Node seed() {
        return seed;
    }

    Node node(String host, int port) {
        return nodes.computeIfAbsent(host + ":" + port, address -> new Node(engine, host, port));
    }

    Collection<Node> nodes() {
        return new ArrayList<>(nodes.values());
    }

    /** The primaries holding the data now: the server, or in Redis Cluster each slot's node, once. */
    Collection<Node> primaries() {
        if (!cluster) {
            return java.util.List.of(seed);
        }
        java.util.Set<Node> primaries = new java.util.LinkedHashSet<>();
        for (int slot = 0; slot < Cluster.SLOTS; slot++) {
            Node node = slots.get(slot);
            if (node != null) {
                primaries.add(node);
            }
        }
        return primaries;
    }

    public Node nodeFor(String key) {
        if (!cluster) {
            return seed;
        }
        Node node = slots.get(Cluster.slot(key));
        return node != null ? node : seed;
    }

    /** The redirection a reply from {@code node} asks for (a {@code MOVED} is remembered), or null. */
    Cluster.Redirect redirect(Node node, Object reply) {
        if (!(reply instanceof RespError)) {
            return null;
        }
        Cluster.Redirect redirect = Cluster.redirect((RespError) reply, node.host);
        if (redirect != null && !redirect.ask) {
            slots.set(redirect.slot, node(redirect.host, redirect.port));
            cluster = true;
        }
        return redirect;
    }

    /** One call about {@code key}, following redirections. */
    Reply call(String key, Object... args) {
        return call(nodeFor(key), false, key, args);
    }

    /** One call about {@code key} sent first to {@code node} (after {@code ASKING}), following redirections. */
    Reply call(Node node, boolean asking, String key, Object... args) {
        return call(node, asking, null, key, args);
    }

    /** A write about {@code key}, confirmed by the replicas as {@code confirm} says (null: not), following redirections. */
    Reply write(Confirm confirm, String key, Object... args) {
        return call(nodeFor(key), false, confirm, key, args);
    }

    /** As {@link #call(Node, boolean, String, Object...)}, the write confirmed as {@code confirm} says (null: not). */
    Reply call(Node node, boolean asking, Confirm confirm, String key, Object... args) {
        for (int hop = 0; hop <= MAX_REDIRECTS; hop++) {
            Object reply;
            try {
                reply = node.call(asking, confirm, args);
            } catch (Unconfirmed e) {
                e.node = node;
                throw e;
            } catch (RLockException e) {
                if (sentinels == null && !cluster || e.code() != null) {
                    throw e;
                }
                node = recover(node, key); // the same call (its same request id) on the primary now
                continue;
            }
            if (cluster && reply instanceof RespError error && error.code().matches("CLUSTERDOWN|TRYAGAIN")
                    && hop < MAX_REDIRECTS) {
                Engine.sleepQuietly(500); // a failover under way
                continue;
            }
            if (sentinels != null && reply instanceof RespError error && error.code().equals("READONLY")) {
                node = recover(node);
                continue;
            }
            Cluster.Redirect redirect = redirect(node, reply);
            if (redirect == null) {
                return new Reply(node, reply);
            }
            node = node(redirect.host, redirect.port);
            asking = redirect.ask;
        }
        throw new RLockException("CLUSTER", "more than " + MAX_REDIRECTS + " redirections for " + key);
    }

    void close() {
        nodes.values().forEach(Node::close);
    }
}
