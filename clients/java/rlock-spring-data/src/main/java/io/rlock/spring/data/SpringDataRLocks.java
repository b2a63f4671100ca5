package io.rlock.spring.data;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import io.rlock.lettuce.LettuceRLocks;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisPassword;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * rlock's locks over a Spring Data Redis {@link RedisConnectionFactory}, as an application
 * configured it once: {@code SpringDataRLocks.of(factory)}. With Lettuce underneath
 * ({@link LettuceConnectionFactory}, Spring Boot's default), the sessions are dedicated
 * connections of the factory's own native {@code RedisClient} to its standalone address,
 * credentials, database and TLS setting (see rlock-lettuce). The factory must be started.
 *
 * <p>Not yet: a Sentinel or Cluster configuration, and Jedis underneath; each is refused with
 * {@link IllegalArgumentException} saying so.
 */
public final class SpringDataRLocks {
    private SpringDataRLocks() {
    }

    public static RLockClient of(RedisConnectionFactory factory) {
        return of(factory, new RLockOptions());
    }

    public static RLockClient of(RedisConnectionFactory factory, RLockOptions options) {
        if (factory == null || options == null) {
            throw new IllegalArgumentException("a RedisConnectionFactory and options, not null");
        }
        if (!(factory instanceof LettuceConnectionFactory lettuce)) {
            throw new IllegalArgumentException(factory.getClass().getName()
                    + " is not supported yet: rlock runs over Spring Data Redis with Lettuce underneath (LettuceConnectionFactory)");
        }
        if (lettuce.getSentinelConfiguration() != null || lettuce.getClusterConfiguration() != null) {
            throw new IllegalArgumentException("a Sentinel or Cluster LettuceConnectionFactory is not supported yet:"
                    + " use RLockClient.create with a redis-sentinel:// URI or a cluster seed");
        }
        AbstractRedisClient nativeClient = lettuce.isRunning() ? lettuce.getNativeClient() : null;
        if (!(nativeClient instanceof RedisClient client)) {
            throw new IllegalArgumentException("the LettuceConnectionFactory is not started (no native RedisClient):"
                    + " call afterPropertiesSet()/start() first, as Spring's context does");
        }
        return LettuceRLocks.of(client, uriOf(lettuce), options);
    }

    /** The factory's standalone address and settings as Lettuce's URI. */
    static RedisURI uriOf(LettuceConnectionFactory factory) {
        RedisStandaloneConfiguration standalone = factory.getStandaloneConfiguration();
        RedisURI.Builder uri = RedisURI.builder().withHost(standalone.getHostName()).withPort(standalone.getPort())
                .withDatabase(standalone.getDatabase()).withSsl(factory.getClientConfiguration().isUseSsl())
                .withVerifyPeer(factory.getClientConfiguration().isVerifyPeer())
                .withTimeout(factory.getClientConfiguration().getCommandTimeout());
        RedisPassword password = standalone.getPassword();
        if (password.isPresent()) {
            char[] secret = password.get();
            if (standalone.getUsername() != null) {
                uri.withAuthentication(standalone.getUsername(), secret);
            } else {
                uri.withPassword(secret);
            }
        }
        return uri.build();
    }
}
