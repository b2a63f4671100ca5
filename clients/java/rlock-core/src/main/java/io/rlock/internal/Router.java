package io.rlock.internal;

import io.rlock.*;

import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.Transport;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which node a key's call goes to, as the {@link Transport} (the user's client) says, and what
 * the engine does when that changes: after a call failed in a way a failover explains, the
 * transport refreshes its view and names the key's node again; the watchdog holdings follow
 * their keys to their new primaries ({@link Holdings#rehome}) and are re-bound there
 * ({@link Node#adopt}) or reported lost. The engine computes no slot and asks no sentinel.
 */
public final class Router {
    /** A reply and the node that gave it. */
    record Reply(Node node, Object value) {
    }

    static final int MAX_REDIRECTS = 5;
    /** How long a call waits for a failover to end (the topology to name a primary that answers as one). */
    static final long FAILOVER_TIMEOUT_NANOS = 60_000_000_000L;

    private final Engine engine;
    private final Transport transport;
    private final ConcurrentHashMap<NodeAddress, Node> nodes = new ConcurrentHashMap<>();

    Router(Engine engine, Transport transport) {
        this.engine = engine;
        this.transport = transport;
    }

    /**
     * After {@code failed} failed a call about {@code key} (no connection, {@code READONLY},
     * {@code MOVED}): the key's primary now, once the refreshed topology names a node that answers
     * {@code ROLE} as a primary (within {@link #FAILOVER_TIMEOUT_NANOS}); on a new primary the
     * holdings move there first. {@code failed} itself when it still is the primary (a dropped
     * connection, not a failover).
     */
    synchronized Node recover(Node failed, String key) {
        Node now = nodeFor(key);
        if (now != failed && isPrimary(now)) {
            return now; // another thread followed the failover already
        }
        long end = System.nanoTime() + FAILOVER_TIMEOUT_NANOS;
        while (!engine.isClosed() && System.nanoTime() - end < 0) {
            if (transport.refresh()) {
                Node node = nodeFor(key);
                if (isPrimary(node)) {
                    if (node != failed) {
                        rehome();
                    }
                    return node;
                }
            }
            Engine.sleepQuietly(100);
        }
        throw new RLockException(isCluster() ? "CLUSTERDOWN" : "SENTINEL", "no primary for " + key + " after " + failed
                + " failed (" + transport + ")");
    }

    /** Every holding follows its key's node now; the nodes that serve no data are closed (their waiters re-join). */
    private synchronized void rehome() {
        Set<Node> primaries = new LinkedHashSet<>(primaries());
        Set<Node> to = engine.holdings().rehome(this::nodeFor);
        for (Node old : nodes()) {
            if (!primaries.contains(old) && old.isUp()) {
                old.close();
            }
        }
        to.forEach(Node::adopt);
    }

    /**
     * The node that is {@code key}'s primary now as the topology itself says (read again) and
     * answers {@code ROLE} as a primary; null when none does yet.
     */
    Node primaryNow(String key) {
        if (!transport.refresh()) {
            return null;
        }
        Node node = nodeFor(key);
        return isPrimary(node) ? node : null;
    }

    private static boolean isPrimary(Node node) {
        try {
            Object role = node.call(false, "ROLE");
            return role instanceof List<?> list && !list.isEmpty() && "master".equals(Replies.text(list.get(0)));
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * On the maintenance thread every second (Sentinel, Cluster): the topology read again; when
     * it moved (a failover no call of ours noticed yet), the holdings follow their keys and the
     * nodes that serve no data are closed, so their waiters re-join their keys' new primaries.
     */
    void maintain() {
        if (!followsFailovers() || !transport.refresh()) {
            return;
        }
        Set<Node> primaries = new LinkedHashSet<>(primaries());
        boolean moved = engine.holdings().misplaced(this::nodeFor)
                || nodes().stream().anyMatch(node -> !primaries.contains(node) && node.isUp());
        if (moved && primaries.stream().allMatch(Router::isPrimary)) {
            rehome();
        }
    }

    /** After the first session: lets the transport read its topology (a cluster's slot map). */
    void start() {
        transport.refresh();
    }

    /** Whether it follows failovers (Sentinel, Cluster). */
    public boolean followsFailovers() {
        return transport.topology() != Transport.Topology.STANDALONE;
    }

    public boolean isCluster() {
        return transport.topology() == Transport.Topology.CLUSTER;
    }

    Node node(NodeAddress address) {
        return nodes.computeIfAbsent(address, where -> new Node(engine, where));
    }

    Collection<Node> nodes() {
        return new ArrayList<>(nodes.values());
    }

    /** The primaries holding the data now: the server, or in Redis Cluster each master, once. */
    Collection<Node> primaries() {
        return transport.primaries().stream().map(this::node).toList();
    }

    public Node nodeFor(String key) {
        return node(transport.nodeFor(key));
    }

    /**
     * The node a {@code MOVED} or {@code ASK} reply from {@code node} sends the call to, or null
     * for any other reply. {@code MOVED}: the key's node once the transport read the slot map
     * again (the reply's own address while the client's map still says {@code node}).
     */
    Node redirect(Node node, String key, Object reply) {
        if (!(reply instanceof RespError error) || !error.code().matches("MOVED|ASK")) {
            return null;
        }
        NodeAddress named = Redirection.target(error, node.address);
        if (error.code().equals("MOVED") && transport.refresh()) {
            Node now = nodeFor(key);
            if (now != node) {
                return now;
            }
        }
        return named == null ? null : node(named);
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
                if (!followsFailovers() || e.code() != null) {
                    throw e;
                }
                node = recover(node, key); // the same call (its same request id) on the primary now
                asking = false;
                continue;
            }
            if (isCluster() && reply instanceof RespError error && error.code().matches("CLUSTERDOWN|TRYAGAIN")
                    && hop < MAX_REDIRECTS) {
                Engine.sleepQuietly(500); // a failover under way
                continue;
            }
            if (followsFailovers() && reply instanceof RespError error && error.code().equals("READONLY")) {
                node = recover(node, key);
                asking = false;
                continue;
            }
            Node next = redirect(node, key, reply);
            if (next == null) {
                return new Reply(node, reply);
            }
            asking = ((RespError) reply).code().equals("ASK");
            node = next;
        }
        throw new RLockException("CLUSTER", "more than " + MAX_REDIRECTS + " redirections for " + key);
    }

    void close() {
        nodes.values().forEach(Node::close);
        transport.close();
    }

    @Override
    public String toString() {
        return transport.toString();
    }
}
