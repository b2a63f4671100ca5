package io.rlock.jedis;

import io.rlock.internal.transport.NodeAddress;
import java.util.List;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisSentinelPool;

/**
 * The primary a {@link JedisSentinelPool} follows: Jedis's own sentinel support (its listeners on
 * the sentinels' {@code +switch-master}) names it; rlock asks no sentinel itself. A refresh reads
 * the pool's current primary: Jedis updates it when the sentinels announce a failover, and until
 * then the engine's check ({@code ROLE}) keeps a session off the demoted node and asks again.
 */
final class SentinelTransport extends JedisTransport {
    private final JedisSentinelPool pool;

    SentinelTransport(JedisSentinelPool pool, JedisClientConfig primaryConfig, Runnable onClose) {
        super(primaryConfig, onClose);
        this.pool = pool;
    }

    @Override
    public Topology topology() {
        return Topology.SENTINEL;
    }

    @Override
    public NodeAddress nodeFor(String key) {
        HostAndPort primary = pool.getCurrentHostMaster();
        if (primary == null) {
            throw new IllegalStateException("Jedis's sentinel pool names no primary");
        }
        return addressOf(primary);
    }

    @Override
    public List<NodeAddress> primaries() {
        return List.of(nodeFor(""));
    }

    @Override
    public boolean refresh() {
        return pool.getCurrentHostMaster() != null;
    }

    @Override
    public String toString() {
        return "jedis sentinel pool " + pool.getCurrentHostMaster();
    }
}
