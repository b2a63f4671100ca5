package io.rlock.jedis;

import io.rlock.RLockClient;
import io.rlock.RLockException;
import io.rlock.RLockOptions;
import io.rlock.internal.Clients;
import java.util.HashSet;
import java.util.Set;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisSentinelPool;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.providers.ClusterConnectionProvider;

/**
 * rlock's locks over Jedis, with the settings a Jedis user already holds: the
 * {@link JedisClientConfig} a {@code JedisPooled}, {@code JedisSentinelPool} or
 * {@code JedisCluster} was built with (credentials, TLS, timeouts, database). The engine's
 * sessions are dedicated Jedis connections made with that config, never borrowed from the user's
 * pool: a pool closing or evicting its idle connections cannot touch a session, so it cannot end
 * a held lock. Closing the RLockClient (or its failing to start) closes only what it made, never
 * the user's pool or cluster.
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
        return Clients.create(options, new StandaloneTransport(node, config));
    }

    /**
     * The primary that the user's {@link JedisSentinelPool} follows, connected to with
     * {@code primaryConfig} (the config the pool was built with for the primary). After a
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
     * the RLockClient closes (or fails to start): a pool made for it alone is closed there.
     */
    public static RLockClient ofSentinels(JedisSentinelPool sentinels, JedisClientConfig primaryConfig,
            RLockOptions options, Runnable onClose) {
        require(sentinels, primaryConfig, options);
        return Clients.create(options, new SentinelTransport(sentinels, primaryConfig, onClose));
    }

    /**
     * A Redis Cluster that the user's {@link JedisCluster} is connected to, {@code nodeConfig} being
     * the config it was built with: rlock keeps a Jedis slot cache of its own
     * ({@link ClusterConnectionProvider}, what JedisCluster routes with, seeded with the nodes
     * the user's cluster knows) for the key → node of its sessions, one per master, each a Jedis
     * connection made with {@code nodeConfig}. The user's cluster stays open.
     */
    public static RLockClient of(JedisCluster cluster, JedisClientConfig nodeConfig) {
        return of(cluster, nodeConfig, new RLockOptions());
    }

    public static RLockClient of(JedisCluster cluster, JedisClientConfig nodeConfig, RLockOptions options) {
        require(cluster, nodeConfig, options);
        Set<HostAndPort> seeds = new HashSet<>();
        cluster.getClusterNodes().keySet().forEach(node -> seeds.add(HostAndPort.from(node)));
        return ofCluster(seeds, nodeConfig, options);
    }

    /** A Redis Cluster reached from {@code seeds} with {@code nodeConfig}, as {@code new JedisCluster(seeds, nodeConfig)}. */
    public static RLockClient ofCluster(Set<HostAndPort> seeds, JedisClientConfig nodeConfig, RLockOptions options) {
        require(seeds, nodeConfig, options);
        if (seeds.isEmpty()) {
            throw new IllegalArgumentException("a cluster needs a seed node");
        }
        ClusterConnectionProvider slots;
        try {
            slots = new ClusterConnectionProvider(seeds, nodeConfig);
        } catch (JedisException e) {
            throw new RLockException("cannot read the cluster's slots through Jedis from " + seeds + ": " + e.getMessage(), e);
        }
        return Clients.create(options, new ClusterTransport(slots, nodeConfig, slots::close));
    }

    private static void require(Object client, JedisClientConfig config, RLockOptions options) {
        if (client == null || config == null || options == null) {
            throw new IllegalArgumentException("a Jedis node, pool or cluster, its JedisClientConfig and options, not null");
        }
    }
}
