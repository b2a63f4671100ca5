package io.rlock.spring;

import io.rlock.RLockClient;
import io.rlock.spring.data.SpringDataRLocks;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;

/**
 * The rlock client of a Spring application, built from the {@link RedisConnectionFactory} it
 * already configured, so that the one-bean switches need nothing but that factory.
 */
public final class RLockClients {
    private static final String JEDIS_FACTORY = "org.springframework.data.redis.connection.jedis.JedisConnectionFactory";

    private RLockClients() {
    }

    /**
     * A client over {@code factory}: with Lettuce underneath (Spring Boot's default), rlock's
     * sessions are connections of the factory's own Lettuce client ({@link SpringDataRLocks});
     * with Jedis underneath, which that adapter does not take yet, a client of the core's own
     * transport to the factory's standalone address, database, credentials and TLS setting. The
     * caller closes it.
     *
     * @throws IllegalArgumentException for a factory neither can follow (a Sentinel or Cluster
     *         configuration, a Lettuce factory not started, another type): nothing is connected
     */
    public static RLockClient fromConnectionFactory(RedisConnectionFactory factory) {
        if (factory == null) {
            throw new IllegalArgumentException("the RedisConnectionFactory is null");
        }
        if (factory.getClass().getName().equals(JEDIS_FACTORY)) {
            // Named, not instanceof: an application without Jedis never loads its factory class.
            return RLockClient.create(JedisSettings.uri(factory));
        }
        return SpringDataRLocks.of(factory);
    }

    /** A standalone Jedis factory's settings as a {@code redis://} or {@code rediss://} URI. */
    static final class JedisSettings {
        private JedisSettings() {
        }

        static String uri(RedisConnectionFactory factory) {
            JedisConnectionFactory jedis = (JedisConnectionFactory) factory;
            if (jedis.getSentinelConfiguration() != null || jedis.getClusterConfiguration() != null) {
                throw new IllegalArgumentException("a Sentinel or Cluster JedisConnectionFactory is not supported yet:"
                        + " build the RLockClient for the topology and pass it");
            }
            RedisStandaloneConfiguration standalone = jedis.getStandaloneConfiguration();
            StringBuilder uri = new StringBuilder(jedis.isUseSsl() ? "rediss://" : "redis://");
            char[] password = standalone.getPassword().toOptional().orElse(null);
            if (password != null) {
                if (standalone.getUsername() != null) {
                    uri.append(encode(standalone.getUsername()));
                }
                uri.append(':').append(encode(new String(password))).append('@');
            }
            uri.append(standalone.getHostName()).append(':').append(standalone.getPort());
            return uri.append('/').append(standalone.getDatabase()).toString();
        }

        private static String encode(String part) {
            return URLEncoder.encode(part, StandardCharsets.UTF_8);
        }
    }
}
