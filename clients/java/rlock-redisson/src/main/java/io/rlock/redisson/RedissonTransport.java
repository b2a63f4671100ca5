package io.rlock.redisson;

import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.SessionSettings;
import io.rlock.internal.transport.Transport;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.redisson.client.RedisClient;
import org.redisson.client.RedisPubSubConnection;
import org.redisson.config.Config;
import org.redisson.connection.ConnectionManager;
import org.redisson.connection.MasterSlaveEntry;
import org.redisson.misc.RedisURI;

/**
 * The transport over a Redisson client: the node for a key and the primaries are Redisson's
 * connection manager's (its slot calculation, its Sentinel or Cluster view, which Redisson keeps
 * current itself: sentinel events, cluster scans every {@code scanInterval}), and each session
 * is a new dedicated connection of the Redisson client of that node: its Config's TLS,
 * credentials, database and timeouts, in none of Redisson's pools.
 */
final class RedissonTransport implements Transport {
    private final ConnectionManager nodes;
    private final Config config;

    RedissonTransport(ConnectionManager nodes) {
        this.nodes = nodes;
        this.config = nodes.getServiceManager().getCfg();
    }

    @Override
    public Topology topology() {
        if (config.isClusterConfig()) {
            return Topology.CLUSTER;
        }
        // Sentinel, replicated, master/slave: the primary Redisson names, followed through failovers.
        return config.isSingleConfig() ? Topology.STANDALONE : Topology.SENTINEL;
    }

    @Override
    public int database() {
        return config.isClusterConfig() ? 0 : nodes.getServiceManager().getConfig().getDatabase();
    }

    @Override
    public NodeAddress nodeFor(String key) {
        MasterSlaveEntry entry = nodes.getEntry(key);
        if (entry == null) {
            entry = anyEntry();
        }
        return address(entry.getClient());
    }

    @Override
    public List<NodeAddress> primaries() {
        List<NodeAddress> primaries = new ArrayList<>();
        for (MasterSlaveEntry entry : nodes.getEntrySet()) {
            NodeAddress address = address(entry.getClient());
            if (!primaries.contains(address)) {
                primaries.add(address);
            }
        }
        return primaries;
    }

    /**
     * Redisson's view is what the engine reads next: Redisson updates it on its own (a Sentinel's
     * {@code +switch-master}, a cluster scan each {@code scanInterval}), and no public call of
     * Redisson's re-reads it on demand; the engine asks again until the node answers as a primary.
     */
    @Override
    public boolean refresh() {
        return !nodes.getEntrySet().isEmpty();
    }

    @Override
    public Connection open(SessionSettings settings) throws IOException {
        RedisClient client = clientOf(settings.node());
        RedisPubSubConnection connection;
        try {
            connection = client.connectPubSubAsync().toCompletableFuture()
                    .get(client.getConfig().getConnectTimeout() + settings.responseTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while connecting through Redisson to " + settings.node(), e);
        } catch (ExecutionException | TimeoutException e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            throw new IOException("cannot connect through Redisson to " + settings.node() + ": " + cause.getMessage(), cause);
        }
        NodeAddress node = settings.node();
        RedissonConnection opened = new RedissonConnection(connection, settings.listener(), node.host(), node.port(), settings.responseTimeout());
        try {
            opened.start(settings.clientName());
        } catch (IOException | RuntimeException e) {
            opened.close();
            throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
        }
        return opened;
    }

    /** The Redisson client of the primary at {@code node}, as Redisson's connection manager knows it now. */
    private RedisClient clientOf(NodeAddress node) throws IOException {
        for (MasterSlaveEntry entry : nodes.getEntrySet()) {
            RedisClient client = entry.getClient();
            if (client != null && address(client).equals(node)) {
                return client;
            }
        }
        throw new IOException("Redisson serves no primary at " + node + " now");
    }

    private MasterSlaveEntry anyEntry() {
        return nodes.getEntrySet().stream().findFirst()
                .orElseThrow(() -> new IllegalStateException("Redisson knows no primary"));
    }

    /** A node as Redisson's config names it (the host it was given or discovered, not a DNS answer). */
    private static NodeAddress address(RedisClient client) {
        RedisURI address = client.getConfig().getAddress();
        return new NodeAddress(address.getHost(), address.getPort());
    }

    @Override
    public String toString() {
        return "redisson " + topology() + " " + primaries();
    }
}
