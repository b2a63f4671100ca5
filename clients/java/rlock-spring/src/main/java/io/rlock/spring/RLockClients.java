package io.rlock.spring;

import io.rlock.RLockClient;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The rlock client of a Spring application: built from the {@link RedisConnectionFactory} it
 * already configured (its address, database, credentials and TLS), so that the one-bean switches
 * need nothing but that factory.
 */
public final class RLockClients {
    private RLockClients() {
    }

    /**
     * A client that reaches the server {@code factory} reaches. The caller closes it.
     *
     * @throws IllegalArgumentException for a factory this version cannot follow (a Sentinel or
     *         Cluster configuration, another factory type): nothing is connected
     */
    public static RLockClient fromConnectionFactory(RedisConnectionFactory factory) {
        if (factory == null) {
            throw new IllegalArgumentException("the RedisConnectionFactory is null");
        }
        return RLockClient.create(uri(factory));
    }

    static String uri(RedisConnectionFactory factory) {
        RedisStandaloneConfiguration standalone;
        boolean ssl;
        if (factory instanceof LettuceConnectionFactory lettuce && isStandalone(lettuce)) {
            standalone = lettuce.getStandaloneConfiguration();
            ssl = lettuce.isUseSsl();
        } else if (factory instanceof JedisConnectionFactory jedis && jedis.getSentinelConfiguration() == null
                && jedis.getClusterConfiguration() == null) {
            standalone = jedis.getStandaloneConfiguration();
            ssl = jedis.isUseSsl();
        } else {
            throw new IllegalArgumentException("rlock follows a standalone Lettuce or Jedis RedisConnectionFactory; got "
                    + factory.getClass().getName() + " (Sentinel and Cluster: build the RLockClient yourself and pass it)");
        }
        if (standalone == null) {
            throw new IllegalArgumentException("the RedisConnectionFactory has no standalone configuration");
        }
        StringBuilder uri = new StringBuilder(ssl ? "rediss://" : "redis://");
        String user = standalone.getUsername();
        char[] password = standalone.getPassword().toOptional().orElse(null);
        if (password != null) {
            if (user != null) {
                uri.append(encode(user));
            }
            uri.append(':').append(encode(new String(password))).append('@');
        }
        uri.append(standalone.getHostName()).append(':').append(standalone.getPort());
        uri.append('/').append(standalone.getDatabase());
        return uri.toString();
    }

    private static boolean isStandalone(LettuceConnectionFactory lettuce) {
        return lettuce.getSentinelConfiguration() == null && lettuce.getClusterConfiguration() == null
                && lettuce.getSocketConfiguration() == null;
    }

    private static String encode(String part) {
        return URLEncoder.encode(part, StandardCharsets.UTF_8);
    }
}
