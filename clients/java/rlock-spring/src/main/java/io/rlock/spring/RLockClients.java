package io.rlock.spring;

import io.rlock.RLockClient;
import io.rlock.spring.data.SpringDataRLocks;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The rlock client of a Spring application, built from the {@link RedisConnectionFactory} it
 * already configured, so that the one-bean switches need nothing but that factory.
 */
public final class RLockClients {
    private RLockClients() {
    }

    /**
     * A client over {@code factory} ({@link SpringDataRLocks}): with Lettuce or Jedis underneath,
     * standalone, Sentinel or Cluster, rlock's sessions are dedicated connections made with the
     * factory's own driver and settings. The caller closes it.
     *
     * @throws IllegalArgumentException for a factory it cannot follow (not started, another
     *         type): nothing is connected
     */
    public static RLockClient fromConnectionFactory(RedisConnectionFactory factory) {
        if (factory == null) {
            throw new IllegalArgumentException("the RedisConnectionFactory is null");
        }
        return SpringDataRLocks.of(factory);
    }
}
