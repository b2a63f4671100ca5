package io.rlock.internal;

import io.rlock.*;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import io.rlock.internal.resp.Cluster;
import io.rlock.internal.resp.RespConnection;

/**
 * Redis Cluster through failovers: the slot map read again ({@code CLUSTER SLOTS}) every second
 * and after a node failed a call; a node that no longer serves any slot (a replica now, or dead)
 * gives its watchdog holdings to their keys' new primaries (re-bound there, or reported lost)
 * and its session is closed, so its waiters send their waits again to the new primary.
 */
public final class ClusterSlots {
    private ClusterSlots() {
    }

    /** Reads the slots from the first node that answers; false when none did. */
    static synchronized boolean refresh(Router router, Engine engine) {
        List<Node> nodes = new java.util.ArrayList<>(router.nodes());
        nodes.sort((a, b) -> Boolean.compare(b.isUp(), a.isUp())); // those connected first
        for (Node node : nodes) {
            Object reply;
            try {
                reply = node.call(false, "CLUSTER", "SLOTS");
            } catch (RuntimeException e) {
                continue;
            }
            if (!(reply instanceof List<?> ranges) || ranges.isEmpty()) {
                continue;
            }
            Set<Node> primaries = new HashSet<>();
            for (Object entry : ranges) {
                List<?> range = (List<?>) entry;
                List<?> primary = (List<?>) range.get(2);
                String host = RespConnection.text(primary.get(0));
                Node owner = router.node(host.isEmpty() ? node.host : host, (int) Replies.number(primary.get(1), 0));
                primaries.add(owner);
                for (int slot = (int) Replies.number(range.get(0), 0); slot <= Replies.number(range.get(1), -1); slot++) {
                    router.assign(slot, owner);
                }
            }
            // Holdings follow their slot; a node that serves none is closed (its waiters re-join).
            Set<Node> to = engine.holdings().rehome(router::nodeFor);
            for (Node old : router.nodes()) {
                if (!primaries.contains(old) && old.isUp()) {
                    old.close();
                }
            }
            to.forEach(Node::adopt);
            return true;
        }
        return false;
    }

    /** After {@code failed} failed a call about {@code key}: its slot's primary once the cluster names another (up to 60 s). */
    static Node recover(Router router, Engine engine, Node failed, String key) {
        long end = System.nanoTime() + Router.FAILOVER_TIMEOUT_NANOS;
        while (!engine.isClosed() && System.nanoTime() - end < 0) {
            refresh(router, engine);
            Node node = router.nodeFor(key);
            if (node != failed) {
                return node;
            }
            Engine.sleepQuietly(200);
        }
        throw new RLockException("CLUSTERDOWN", "no primary for slot " + Cluster.slot(key) + " after " + failed + " failed");
    }
}
