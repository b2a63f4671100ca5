package io.rlock.spring.data;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import io.rlock.lettuce.LettuceRLocks;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisNode;
import org.springframework.data.redis.connection.RedisPassword;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConverters;

/**
 * A {@link LettuceConnectionFactory}'s locks through its own native client (rlock-lettuce): the
 * {@code RedisClient} with the standalone address or the Sentinel URI Spring Data builds from the
 * factory's sentinels, or the {@code RedisClusterClient} with a seed of the cluster
 * configuration; each with the factory's credentials, database, TLS and command timeout.
 */
final class LettuceFactories {
    private LettuceFactories() {
    }

    static RLockClient of(RedisConnectionFactory factory, RLockOptions options) {
        LettuceConnectionFactory lettuce = (LettuceConnectionFactory) factory;
        SpringDataRLocks.requireRunning(lettuce.isRunning(), "LettuceConnectionFactory");
        AbstractRedisClient nativeClient = lettuce.getNativeClient();
        RedisClusterConfiguration cluster = lettuce.getClusterConfiguration();
        if (cluster != null && nativeClient instanceof RedisClusterClient clusterClient) {
            return LettuceRLocks.of(clusterClient, clusterSeedOf(lettuce, cluster), options);
        }
        if (!(nativeClient instanceof RedisClient client)) {
            throw new IllegalArgumentException("the LettuceConnectionFactory has no native RedisClient: " + nativeClient);
        }
        return LettuceRLocks.of(client, uriOf(lettuce), options);
    }

    /** The factory's standalone address, or its Sentinel URI, with its settings, as Lettuce's URI. */
    static RedisURI uriOf(LettuceConnectionFactory factory) {
        RedisSentinelConfiguration sentinel = factory.getSentinelConfiguration();
        if (sentinel != null) {
            // Spring Data's own conversion: the sentinels, their credentials, the master's name,
            // the data nodes' password and database.
            // (RedisURI.builder(uri) does not copy a Sentinel URI's sentinels: the client settings are set on it.)
            RedisURI uri = LettuceConverters.sentinelConfigurationToRedisURI(sentinel);
            LettuceClientConfiguration client = factory.getClientConfiguration();
            uri.setSsl(client.isUseSsl());
            uri.setVerifyPeer(client.isVerifyPeer());
            uri.setTimeout(client.getCommandTimeout());
            return uri;
        }
        RedisStandaloneConfiguration standalone = factory.getStandaloneConfiguration();
        RedisURI.Builder uri = RedisURI.builder().withHost(standalone.getHostName()).withPort(standalone.getPort())
                .withDatabase(standalone.getDatabase());
        withCredentials(uri, standalone.getUsername(), standalone.getPassword());
        return withClientSettings(uri, factory.getClientConfiguration()).build();
    }

    /** The first node of the cluster configuration, with its credentials and the client's settings. */
    private static RedisURI clusterSeedOf(LettuceConnectionFactory factory, RedisClusterConfiguration cluster) {
        RedisNode seed = cluster.getClusterNodes().stream().findFirst()
                .orElseThrow(() -> new IllegalArgumentException("the cluster configuration names no node"));
        RedisURI.Builder uri = RedisURI.builder().withHost(seed.getHost()).withPort(seed.getPort());
        withCredentials(uri, cluster.getUsername(), cluster.getPassword());
        return withClientSettings(uri, factory.getClientConfiguration()).build();
    }

    private static void withCredentials(RedisURI.Builder uri, String username, RedisPassword password) {
        if (password.isPresent()) {
            if (username != null) {
                uri.withAuthentication(username, password.get());
            } else {
                uri.withPassword(password.get());
            }
        }
    }

    private static RedisURI.Builder withClientSettings(RedisURI.Builder uri, LettuceClientConfiguration client) {
        return uri.withSsl(client.isUseSsl()).withVerifyPeer(client.isVerifyPeer()).withTimeout(client.getCommandTimeout());
    }
}
