package io.rlock.jedis;

import io.rlock.RLockClient;
import io.rlock.RLockException;
import io.rlock.RLockOptions;
import io.rlock.internal.Clients;
import io.rlock.internal.resp.RedisUri;
import java.util.Iterator;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisSentinelPool;

/**
 * rlock's locks over Jedis, with the settings a Jedis user already holds: the
 * {@link JedisClientConfig} a {@code JedisPooled}, {@code JedisSentinelPool} or
 * {@code JedisCluster} was built with (credentials, TLS, timeouts, database). The engine's
 * sessions are dedicated Jedis connections made with that config, never borrowed from the user's
 * pool: a pool closing or evicting its idle connections cannot touch a session, so it cannot end
 * a held lock. Closing the RLockClient closes only its own connections, never the user's pool.
 */
public final class JedisRLocks {
    private JedisRLocks() {
    }

    /** A standalone server {@code node}, connected to with {@code config} (as {@code new JedisPooled(node, config)}). */
    public static RLockClient of(HostAndPort node, JedisClientConfig config) {
        return of(node, config, new RLockOptions());
    }

    /**
     * As above; {@code options} gives the watchdog lease, confirmation by the replicas, the name
     * mapper and the response timeout. Connection settings (TLS, credentials) are Jedis's here.
     *
     * @throws RLockException when the server cannot be reached or has no rlock module
     */
    public static RLockClient of(HostAndPort node, JedisClientConfig config, RLockOptions options) {
        require(node, config, options);
        return Clients.create(uri(node, config.getDatabase()), options, new JedisConnector(config, null));
    }

    /**
     * The primary that {@code sentinels} (the user's {@link JedisSentinelPool}) names, connected to
     * with {@code primaryConfig} (the config the pool was built with for the primary). After a
     * failover the pool names the new primary; the engine's new session re-binds the holdings
     * there. The pool stays the user's: it is not closed with the RLockClient.
     */
    public static RLockClient of(JedisSentinelPool sentinels, JedisClientConfig primaryConfig) {
        return of(sentinels, primaryConfig, new RLockOptions());
    }

    public static RLockClient of(JedisSentinelPool sentinels, JedisClientConfig primaryConfig, RLockOptions options) {
        return ofSentinels(sentinels, primaryConfig, options, null);
    }

    /**
     * As {@link #of(JedisSentinelPool, JedisClientConfig, RLockOptions)}; {@code onClose} runs when
     * the RLockClient closes (a pool made for it alone, e.g. by rlock-spring-data, is closed there).
     */
    public static RLockClient ofSentinels(JedisSentinelPool sentinels, JedisClientConfig primaryConfig,
            RLockOptions options, Runnable onClose) {
        require(sentinels, primaryConfig, options);
        RedisUri where = RedisUri.parse("redis://sentinel-primary:6379/" + primaryConfig.getDatabase());
        return Clients.create(where, options, new JedisConnector(primaryConfig, sentinels::getCurrentHostMaster) {
            @Override
            public void close() {
                if (onClose != null) {
                    onClose.run();
                }
            }
        });
    }

    /**
     * A Redis Cluster that {@code cluster} (the user's {@link JedisCluster}) is connected to: one
     * session per master, each a Jedis connection made with {@code nodeConfig} (the config the
     * cluster was built with). The engine starts from a node of Jedis's node map and routes each
     * key to its slot's master, following {@code MOVED}/{@code ASK} and failovers. The cluster
     * client stays the user's.
     */
    public static RLockClient of(JedisCluster cluster, JedisClientConfig nodeConfig) {
        return of(cluster, nodeConfig, new RLockOptions());
    }

    public static RLockClient of(JedisCluster cluster, JedisClientConfig nodeConfig, RLockOptions options) {
        require(cluster, nodeConfig, options);
        Iterator<String> nodes = cluster.getClusterNodes().keySet().iterator();
        if (!nodes.hasNext()) {
            throw new IllegalArgumentException("the JedisCluster knows no node");
        }
        HostAndPort seed = HostAndPort.from(nodes.next());
        return Clients.create(uri(seed, 0), options, new JedisConnector(nodeConfig, null));
    }

    private static RedisUri uri(HostAndPort node, int database) {
        String host = node.getHost().contains(":") ? "[" + node.getHost() + "]" : node.getHost();
        return RedisUri.parse("redis://" + host + ":" + node.getPort() + "/" + database);
    }

    private static void require(Object client, JedisClientConfig config, RLockOptions options) {
        if (client == null || config == null || options == null) {
            throw new IllegalArgumentException("a Jedis node, pool or cluster, its JedisClientConfig and options, not null");
        }
    }
}
