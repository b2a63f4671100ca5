package io.rlock.jedis;

import io.rlock.RLockException;
import io.rlock.internal.transport.NodeAddress;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.providers.ClusterConnectionProvider;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Redis Cluster through Jedis's own slot cache ({@link ClusterConnectionProvider}, what a
 * {@code JedisCluster} routes with): a key's node is {@code getNode(JedisClusterCRC16.getSlot(key))},
 * the primaries are its primary nodes, a refresh is its {@code renewSlotCache()}. rlock computes
 * no slot and reads no slot map itself.
 */
final class ClusterTransport extends JedisTransport {
    private static final int SLOTS = 16384;
    private final ClusterConnectionProvider slots;

    ClusterTransport(ClusterConnectionProvider slots, JedisClientConfig nodeConfig, Runnable onClose) {
        super(nodeConfig, onClose);
        this.slots = slots;
    }

    @Override
    public Topology topology() {
        return Topology.CLUSTER;
    }

    @Override
    public int database() {
        return 0;
    }

    @Override
    public NodeAddress nodeFor(String key) {
        HostAndPort node = slots.getNode(JedisClusterCRC16.getSlot(key));
        if (node == null) {
            List<NodeAddress> primaries = primaries();
            if (primaries.isEmpty()) {
                throw new RLockException("CLUSTERDOWN", "Jedis's slot cache names no primary");
            }
            return primaries.get(0); // its answer (MOVED, CLUSTERDOWN) makes the engine refresh
        }
        return addressOf(node);
    }

    /**
     * The nodes Jedis's slot cache names for the 16384 slots: its primary-node map keeps a demoted
     * primary after a refresh, its slot table does not.
     */
    @Override
    public List<NodeAddress> primaries() {
        Set<NodeAddress> primaries = new LinkedHashSet<>();
        for (int slot = 0; slot < SLOTS; slot++) {
            HostAndPort node = slots.getNode(slot);
            if (node != null) {
                primaries.add(addressOf(node));
            }
        }
        return List.copyOf(primaries);
    }

    @Override
    public boolean refresh() {
        try {
            slots.renewSlotCache();
            return slots.getNode(0) != null || !primaries().isEmpty();
        } catch (JedisException e) {
            return false;
        }
    }

    @Override
    public String toString() {
        return "jedis cluster " + primaries();
    }
}
