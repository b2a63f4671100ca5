package rlock;

import java.util.ArrayList;
import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import rlock.resp.Cluster;
import rlock.resp.RespError;

/**
 * Which node a key's call goes to. A standalone server is the one node; in Redis Cluster the
 * slots learnt from {@code MOVED} replies send later calls straight to their node, and
 * {@code ASK} sends one call, after {@code ASKING}, to the node importing the slot.
 */
final class Router {
    /** A reply and the node that gave it. */
    record Reply(Node node, Object value) {
    }

    static final int MAX_REDIRECTS = 5;

    private final Engine engine;
    private final Node seed;
    private final ConcurrentHashMap<String, Node> nodes = new ConcurrentHashMap<>();
    private final AtomicReferenceArray<Node> slots = new AtomicReferenceArray<>(Cluster.SLOTS);
    private volatile boolean cluster;

    Router(Engine engine, String host, int port) {
        this.engine = engine;
        this.seed = node(host, port);
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

    Node nodeFor(String key) {
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
            } catch (Confirm.Unconfirmed e) {
                e.node = node;
                throw e;
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
