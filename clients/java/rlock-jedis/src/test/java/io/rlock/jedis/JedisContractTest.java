package io.rlock.jedis;

import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import io.rlock.testing.TransportContract;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisSentinelPool;

/**
 * The transport contract (rlock-test-support's {@link TransportContract}) over Jedis: a node and
 * the config a {@code JedisPooled} is built with, the user's {@link JedisSentinelPool}, and the
 * user's {@link JedisCluster}, each closed after each test.
 */
class JedisContractTest extends TransportContract {
    private static final JedisClientConfig CONFIG = DefaultJedisClientConfig.builder().build();
    private final List<Runnable> shutdowns = new ArrayList<>();

    @Override
    protected RLockClient standalone(HostPort server) {
        return JedisRLocks.of(new HostAndPort(server.host(), server.port()), CONFIG);
    }

    @Override
    protected RLockClient sentinel(String masterName, List<HostPort> sentinels) {
        Set<HostAndPort> addresses = new HashSet<>();
        sentinels.forEach(sentinel -> addresses.add(new HostAndPort(sentinel.host(), sentinel.port())));
        JedisSentinelPool pool = new JedisSentinelPool(masterName, addresses, CONFIG, CONFIG);
        shutdowns.add(pool::close);
        return JedisRLocks.of(pool, CONFIG, new RLockOptions());
    }

    @Override
    protected RLockClient cluster(List<HostPort> primaries) {
        Set<HostAndPort> seeds = new HashSet<>();
        primaries.forEach(node -> seeds.add(new HostAndPort(node.host(), node.port())));
        JedisCluster cluster = new JedisCluster(seeds, CONFIG);
        shutdowns.add(cluster::close);
        return JedisRLocks.of(cluster, CONFIG);
    }

    @Override
    protected void closeClients() {
        shutdowns.forEach(Runnable::run);
        shutdowns.clear();
    }
}
