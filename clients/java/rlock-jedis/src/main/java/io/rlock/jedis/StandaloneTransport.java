package io.rlock.jedis;

import io.rlock.internal.transport.NodeAddress;
import java.util.List;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/** One server, as a {@code JedisPooled(node, config)} addresses it. */
final class StandaloneTransport extends JedisTransport {
    private final NodeAddress node;

    StandaloneTransport(HostAndPort node, JedisClientConfig config) {
        super(config, null);
        this.node = addressOf(node);
    }

    @Override
    public Topology topology() {
        return Topology.STANDALONE;
    }

    @Override
    public NodeAddress nodeFor(String key) {
        return node;
    }

    @Override
    public List<NodeAddress> primaries() {
        return List.of(node);
    }

    @Override
    public boolean refresh() {
        return true;
    }

    @Override
    public String toString() {
        return "jedis " + node;
    }
}
