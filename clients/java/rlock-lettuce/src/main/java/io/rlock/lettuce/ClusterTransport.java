package io.rlock.lettuce;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.rlock.RLockException;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.SessionSettings;
import io.rlock.internal.transport.Transport;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The transport over a Lettuce {@link RedisClusterClient}: a key's node is its slot's master in
 * Lettuce's own {@link Partitions} ({@link SlotHash}, {@code getMasterBySlot}), and a refresh is
 * Lettuce's {@code refreshPartitions()}. The sessions are dedicated connections to each master,
 * opened by a {@link RedisClient} over the cluster client's resources and options with the seed
 * URI's credentials and TLS (a cluster client's own node connections are shared and reconnect
 * silently, which a watchdog binding cannot live on).
 */
final class ClusterTransport implements Transport {
    private static final long REFRESH_INTERVAL_NANOS = 100_000_000L;
    private final Object refreshing = new Object();
    private long refreshed; // System.nanoTime() of the last refreshPartitions(), 0 before any

    private final RedisClusterClient cluster;
    private final RedisClient nodes;
    private final LettuceSessions sessions;
    private final RedisURI seed;

    ClusterTransport(RedisClusterClient cluster, RedisURI seed) {
        this.cluster = cluster;
        this.seed = seed;
        try {
            if (cluster.getPartitions().isEmpty() && !refresh() || cluster.getPartitions().isEmpty()) {
                throw new RLockException("CLUSTER", "Lettuce read no slot map from " + seed);
            }
        } catch (RedisException e) {
            throw new RLockException("CLUSTER", "Lettuce could not read the slot map from " + seed + ": " + e.getMessage());
        }
        this.nodes = RedisClient.create(cluster.getResources());
        nodes.setOptions(cluster.getOptions());
        this.sessions = new LettuceSessions(nodes, seed);
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
        RedisClusterNode master = cluster.getPartitions().getMasterBySlot(SlotHash.getSlot(key));
        if (master == null) {
            master = primaryNodes().stream().findFirst()
                    .orElseThrow(() -> new RLockException("CLUSTERDOWN", "Lettuce's slot map of " + seed + " names no master"));
        }
        return addressOf(master);
    }

    @Override
    public List<NodeAddress> primaries() {
        return primaryNodes().stream().map(ClusterTransport::addressOf).distinct().toList();
    }

    private List<RedisClusterNode> primaryNodes() {
        List<RedisClusterNode> masters = new ArrayList<>();
        for (RedisClusterNode node : cluster.getPartitions()) {
            if (node.is(RedisClusterNode.NodeFlag.UPSTREAM) && !node.getSlots().isEmpty()) {
                masters.add(node);
            }
        }
        return masters;
    }

    private static NodeAddress addressOf(RedisClusterNode node) {
        return new NodeAddress(node.getUri().getHost(), node.getUri().getPort());
    }

    /**
     * Lettuce's {@code refreshPartitions()}, at most once per {@link #REFRESH_INTERVAL_NANOS}: each
     * opens a connection to every known node, and threads retrying through a failover (a dead
     * node refuses at once) would otherwise open them faster than they close (measured: the
     * JVM's 20,000 descriptors gone in ClusterFailoverTest). Within the interval the last view
     * stands.
     */
    @Override
    public boolean refresh() {
        synchronized (refreshing) {
            long now = System.nanoTime();
            if (refreshed != 0 && now - refreshed < REFRESH_INTERVAL_NANOS) {
                return !cluster.getPartitions().isEmpty();
            }
            refreshed = now;
            try {
                cluster.refreshPartitions();
                return !cluster.getPartitions().isEmpty();
            } catch (RedisException e) {
                return false;
            }
        }
    }

    @Override
    public Connection open(SessionSettings settings) throws IOException {
        return sessions.open(settings);
    }

    @Override
    public void close() {
        sessions.close();
        nodes.shutdownAsync();
    }

    @Override
    public String toString() {
        return "lettuce cluster " + seed;
    }
}
