package io.rlock.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rlock.spring.integration.RLockRegistry;
import io.rlock.spring.shedlock.RLockProvider;
import java.time.Duration;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/** The switches over Spring Data Redis's Jedis driver, and the factories they refuse. */
class ConnectionFactoriesTest {
    static ServerFixture fixture;
    static JedisConnectionFactory jedis;

    @BeforeAll
    static void start() throws Exception {
        fixture = ServerFixture.start();
        jedis = new JedisConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", fixture.server.port));
        jedis.afterPropertiesSet();
        jedis.start();
    }

    @AfterAll
    static void stop() {
        jedis.destroy();
        fixture.close();
    }

    @Test
    void theRegistryAndTheProviderWorkOverJedis() throws Exception {
        RLockRegistry registry = new RLockRegistry(jedis, "jedis");
        RLockProvider provider = new RLockProvider(jedis, "jedis");
        try {
            Lock lock = registry.obtain("a");
            lock.lock();
            assertThat(fixture.lockInfo("jedis:a")).containsEntry("holds", 1L);
            lock.unlock();
            // The early unlock's script goes through Jedis: the lease is left behind.
            provider.lock(new LockConfiguration(ClockProvider.now(), "job", Duration.ofSeconds(30),
                    Duration.ofSeconds(20))).orElseThrow().unlock();
            assertThat(String.valueOf(fixture.lockInfo("job-lock:jedis:job").get("owner")))
                    .startsWith("shedlock-at-least:");
        } finally {
            registry.destroy();
            provider.destroy();
        }
    }

    @Test
    void aJedisUriFromTheFactorysSettings() {
        RedisStandaloneConfiguration settings = new RedisStandaloneConfiguration("db.example", 6380);
        settings.setDatabase(3);
        settings.setUsername("app");
        settings.setPassword("p@ss word");
        assertThat(RLockClients.JedisSettings.uri(new JedisConnectionFactory(settings)))
                .isEqualTo("redis://app:p%40ss+word@db.example:6380/3");
        assertThat(RLockClients.JedisSettings.uri(new JedisConnectionFactory(new RedisStandaloneConfiguration("h", 1))))
                .isEqualTo("redis://h:1/0");
    }

    @Test
    void overLettuceTheLocksUseTheFactorysOwnClient() throws Exception {
        try (var client = RLockClients.fromConnectionFactory(fixture.connectionFactory)) {
            var lock = client.getLock("lettuce:a");
            lock.lock();
            assertThat(fixture.lockInfo("lettuce:a")).containsEntry("holds", 1L);
            // The watchdog binding is on a connection of the factory's Lettuce client (its name).
            assertThat(fixture.lockInfo("lettuce:a").get("watchdog")).isNotNull();
            lock.unlock();
        }
    }

    @Test
    void aSentinelFactoryIsRefusedBeforeAnythingConnects() {
        LettuceConnectionFactory sentinel = new LettuceConnectionFactory(
                new RedisSentinelConfiguration("mymaster", java.util.Set.of("127.0.0.1:1")));
        assertThatThrownBy(() -> new RLockRegistry(sentinel, "app")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Sentinel");
        assertThatThrownBy(() -> RLockClients.fromConnectionFactory(null)).isInstanceOf(IllegalArgumentException.class);
    }
}
