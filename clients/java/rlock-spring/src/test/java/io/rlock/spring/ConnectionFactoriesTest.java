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

/** The switches over Spring Data Redis's Jedis driver (rlock-jedis underneath), and the factories they refuse. */
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
    void overJedisTheSessionsAreJedisConnectionsOfTheirOwn() throws Exception {
        try (var client = RLockClients.fromConnectionFactory(jedis)) {
            var lock = client.getLock("jedis:own");
            lock.lock();
            Object bound = fixture.lockInfo("jedis:own").get("watchdog");
            String sessions = String.valueOf(fixture.call("CLIENT", "LIST"));
            // RESP2 over Jedis: a command connection (holding the watchdog binding) and a subscriber.
            assertThat(sessions.lines().filter(line -> line.contains(" name=rlock-java:" + client.getId() + " ")))
                    .hasSize(2).anyMatch(line -> line.startsWith("id=" + bound + " "));
            lock.unlock();
        }
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
    void aFactoryNotStartedIsRefusedBeforeAnythingConnects() {
        LettuceConnectionFactory sentinel = new LettuceConnectionFactory(
                new RedisSentinelConfiguration("mymaster", java.util.Set.of("127.0.0.1:1")));
        assertThatThrownBy(() -> new RLockRegistry(sentinel, "app")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not started");
        JedisConnectionFactory notStarted = new JedisConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", 1));
        assertThatThrownBy(() -> new RLockProvider(notStarted)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not started");
        assertThatThrownBy(() -> RLockClients.fromConnectionFactory(null)).isInstanceOf(IllegalArgumentException.class);
    }
}
