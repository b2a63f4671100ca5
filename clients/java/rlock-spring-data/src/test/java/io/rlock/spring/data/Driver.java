package io.rlock.spring.data;

import io.rlock.testing.Topology;
import java.util.List;
import java.util.Map;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisConfiguration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/** Spring Data Redis's two drivers: a started factory of each for a configuration, as Spring's context makes it. */
enum Driver {
    LETTUCE, JEDIS;

    RedisConnectionFactory started(RedisConfiguration configuration) {
        if (this == LETTUCE) {
            LettuceConnectionFactory factory;
            if (configuration instanceof RedisSentinelConfiguration sentinel) {
                factory = new LettuceConnectionFactory(sentinel);
            } else if (configuration instanceof RedisClusterConfiguration cluster) {
                factory = new LettuceConnectionFactory(cluster);
            } else {
                factory = new LettuceConnectionFactory((RedisStandaloneConfiguration) configuration);
            }
            factory.afterPropertiesSet();
            factory.start();
            return factory;
        }
        JedisConnectionFactory factory;
        if (configuration instanceof RedisSentinelConfiguration sentinel) {
            factory = new JedisConnectionFactory(sentinel);
        } else if (configuration instanceof RedisClusterConfiguration cluster) {
            factory = new JedisConnectionFactory(cluster);
        } else {
            factory = new JedisConnectionFactory((RedisStandaloneConfiguration) configuration);
        }
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    static void destroy(RedisConnectionFactory factory) {
        if (factory instanceof LettuceConnectionFactory lettuce) {
            lettuce.destroy();
        } else if (factory instanceof JedisConnectionFactory jedis) {
            jedis.destroy();
        }
    }

    static StringRedisTemplate template(RedisConnectionFactory factory) {
        StringRedisTemplate template = new StringRedisTemplate(factory);
        template.afterPropertiesSet();
        return template;
    }

    /** The harness's sentinels (master name {@code rlock}) as Spring Data's configuration. */
    static RedisSentinelConfiguration sentinels(Topology topology) {
        RedisSentinelConfiguration configuration = new RedisSentinelConfiguration().master(
                String.valueOf(topology.describe().get("master_name")));
        for (Object entry : (List<?>) topology.describe().get("sentinels")) {
            @SuppressWarnings("unchecked")
            Map<String, Object> sentinel = (Map<String, Object>) entry;
            configuration.sentinel(String.valueOf(sentinel.get("host")), Topology.port(sentinel));
        }
        return configuration;
    }

    /** The harness cluster's primaries as Spring Data's cluster configuration. */
    static RedisClusterConfiguration cluster(Topology topology) {
        RedisClusterConfiguration configuration = new RedisClusterConfiguration();
        for (Map<String, Object> node : topology.nodes()) {
            if ("primary".equals(node.get("role"))) {
                configuration.clusterNode("127.0.0.1", Topology.port(node));
            }
        }
        return configuration;
    }
}
