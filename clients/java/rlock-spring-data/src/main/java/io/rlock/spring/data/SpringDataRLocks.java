package io.rlock.spring.data;

import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * rlock's locks over a Spring Data Redis {@link RedisConnectionFactory}, as an application
 * configured it once: {@code SpringDataRLocks.of(factory)}, with Lettuce or with Jedis
 * underneath, over a standalone, Sentinel or Cluster configuration. The factory must be started
 * (Spring's context does it). The sessions are dedicated connections made with the factory's own
 * driver and settings (address, credentials, database, TLS, timeouts), never taken from its
 * pool or shared connection:
 * <ul>
 * <li>Lettuce ({@code LettuceConnectionFactory}, Spring Boot's default): connections of the
 * factory's native {@code RedisClient} (standalone, Sentinel) or {@code RedisClusterClient};
 * see rlock-lettuce.</li>
 * <li>Jedis ({@code JedisConnectionFactory}): Jedis connections made with the factory's client
 * configuration; under Sentinel the primary comes from a {@code JedisSentinelPool} of the
 * factory's sentinels; see rlock-jedis.</li>
 * </ul>
 * Another factory type is refused with {@link IllegalArgumentException}, and nothing connected.
 */
public final class SpringDataRLocks {
    private static final String LETTUCE_FACTORY = "org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory";
    private static final String JEDIS_FACTORY = "org.springframework.data.redis.connection.jedis.JedisConnectionFactory";

    private SpringDataRLocks() {
    }

    public static RLockClient of(RedisConnectionFactory factory) {
        return of(factory, new RLockOptions());
    }

    public static RLockClient of(RedisConnectionFactory factory, RLockOptions options) {
        if (factory == null || options == null) {
            throw new IllegalArgumentException("a RedisConnectionFactory and options, not null");
        }
        // Named, not instanceof: an application without Jedis (or Lettuce) never loads that driver's classes.
        String type = factory.getClass().getName();
        if (type.equals(LETTUCE_FACTORY)) {
            return LettuceFactories.of(factory, options);
        }
        if (type.equals(JEDIS_FACTORY)) {
            return JedisFactories.of(factory, options);
        }
        throw new IllegalArgumentException(type + " is not supported: rlock runs over Spring Data Redis's"
                + " LettuceConnectionFactory or JedisConnectionFactory");
    }

    /** Refuses a factory that is not started, before anything connects. */
    static void requireRunning(boolean running, String which) {
        if (!running) {
            throw new IllegalArgumentException("the " + which + " is not started:"
                    + " call afterPropertiesSet()/start() first, as Spring's context does");
        }
    }
}
