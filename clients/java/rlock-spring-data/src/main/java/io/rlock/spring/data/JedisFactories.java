package io.rlock.spring.data;

import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import io.rlock.jedis.JedisRLocks;
import java.util.HashSet;
import java.util.Set;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisNode;
import org.springframework.data.redis.connection.RedisPassword;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisClientConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisSentinelPool;

/**
 * A {@link JedisConnectionFactory}'s locks through Jedis (rlock-jedis), with a
 * {@link JedisClientConfig} made as the factory makes its own: the client configuration's TLS,
 * timeouts and customizer, the topology's credentials and database. Standalone: the configured
 * node. Sentinel: a {@link JedisSentinelPool} of the factory's sentinels names the primary
 * (closed with the RLockClient). Cluster: the factory's own {@link JedisCluster}.
 */
final class JedisFactories {
    private JedisFactories() {
    }

    static RLockClient of(RedisConnectionFactory factory, RLockOptions options) {
        JedisConnectionFactory jedis = (JedisConnectionFactory) factory;
        SpringDataRLocks.requireRunning(jedis.isRunning(), "JedisConnectionFactory");
        JedisClientConfiguration client = jedis.getClientConfiguration();
        RedisClusterConfiguration cluster = jedis.getClusterConfiguration();
        if (cluster != null) {
            JedisClientConfig nodes = config(client, cluster.getUsername(), cluster.getPassword(), 0);
            try (RedisClusterConnection connection = jedis.getClusterConnection()) {
                // The factory's JedisCluster, shared by its connections: closing this one leaves it open.
                return JedisRLocks.of((JedisCluster) connection.getNativeConnection(), nodes, options);
            }
        }
        RedisSentinelConfiguration sentinel = jedis.getSentinelConfiguration();
        if (sentinel != null) {
            JedisClientConfig primary = config(client, sentinel.getUsername(), sentinel.getPassword(),
                    sentinel.getDatabase());
            JedisClientConfig sentinels = config(client, sentinel.getSentinelUsername(), sentinel.getSentinelPassword(), 0);
            Set<HostAndPort> addresses = new HashSet<>();
            for (RedisNode node : sentinel.getSentinels()) {
                addresses.add(new HostAndPort(node.getHost(), node.getPort()));
            }
            JedisSentinelPool pool = new JedisSentinelPool(sentinel.getMaster().getName(), addresses, primary, sentinels);
            try {
                return JedisRLocks.ofSentinels(pool, primary, options, pool::close);
            } catch (RuntimeException e) {
                pool.close();
                throw e;
            }
        }
        RedisStandaloneConfiguration standalone = jedis.getStandaloneConfiguration();
        return JedisRLocks.of(new HostAndPort(standalone.getHostName(), standalone.getPort()),
                config(client, standalone.getUsername(), standalone.getPassword(), standalone.getDatabase()), options);
    }

    /** As JedisConnectionFactory builds its JedisClientConfig: TLS, timeouts, client name, customizer. */
    private static JedisClientConfig config(JedisClientConfiguration client, String username, RedisPassword password,
            int database) {
        DefaultJedisClientConfig.Builder builder = DefaultJedisClientConfig.builder().database(database)
                .connectionTimeoutMillis((int) client.getConnectTimeout().toMillis())
                .socketTimeoutMillis((int) client.getReadTimeout().toMillis()).ssl(client.isUseSsl());
        client.getClientName().ifPresent(builder::clientName);
        client.getSslSocketFactory().ifPresent(builder::sslSocketFactory);
        client.getSslParameters().ifPresent(builder::sslParameters);
        client.getHostnameVerifier().ifPresent(builder::hostnameVerifier);
        if (username != null) {
            builder.user(username);
        }
        password.toOptional().map(String::new).ifPresent(builder::password);
        client.getCustomizer().ifPresent(customizer -> customizer.customize(builder));
        return builder.build();
    }
}
