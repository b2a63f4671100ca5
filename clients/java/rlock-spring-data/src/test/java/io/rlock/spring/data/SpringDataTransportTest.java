package io.rlock.spring.data;

import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.internal.resp.RespConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.RedisServer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/** The API over a started LettuceConnectionFactory, beside the application's own template. */
class SpringDataTransportTest {
    static RedisServer server;
    static RespConnection admin;
    static LettuceConnectionFactory factory;

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start("--requirepass", "s3cret");
        admin = server.admin("s3cret");
        RedisStandaloneConfiguration standalone = new RedisStandaloneConfiguration("127.0.0.1", server.port);
        standalone.setPassword("s3cret");
        standalone.setDatabase(2);
        factory = new LettuceConnectionFactory(standalone);
        factory.afterPropertiesSet();
        factory.start();
    }

    @AfterAll
    static void stop() {
        factory.destroy();
        admin.close();
        server.close();
    }

    @Test
    void locksGoThroughTheFactorysClientWithItsPasswordAndDatabase() throws Exception {
        StringRedisTemplate template = new StringRedisTemplate(factory);
        template.afterPropertiesSet();
        try (RLockClient locks = SpringDataRLocks.of(factory); RLockClient other = SpringDataRLocks.of(factory)) {
            RLock lock = locks.getLock("spring:orders");
            lock.lock();
            Admin.call(admin, "SELECT", "2");
            assertThat(Admin.info(admin, "RLOCK.INFO", "spring:orders")).as("in the factory's database 2").isNotNull();
            Admin.call(admin, "SELECT", "0");
            assertThat(Admin.info(admin, "RLOCK.INFO", "spring:orders")).isNull();
            CompletableFuture<Boolean> waiter = Async.call(() -> {
                RLock theirs = other.getLock("spring:orders");
                boolean got = theirs.tryLock(20, TimeUnit.SECONDS);
                if (got) {
                    theirs.unlock();
                }
                return got;
            });
            Admin.call(admin, "SELECT", "2");
            eventually(10_000, "the other client queued", () -> Admin.waiters(admin, "spring:orders") == 1);
            Admin.call(admin, "SELECT", "0");
            template.opsForValue().set("spring:plain", "still the application's");
            lock.unlock();
            assertThat(waiter.get(10, TimeUnit.SECONDS)).isTrue();
            assertThat(template.opsForValue().get("spring:plain")).isEqualTo("still the application's");
        }
    }

    @Test
    void whatIsNotSupportedYetIsRefusedClearly() {
        RedisConnectionFactory notLettuce = (RedisConnectionFactory) java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {RedisConnectionFactory.class}, (proxy, method, args) -> null);
        assertThatThrownBy(() -> SpringDataRLocks.of(notLettuce)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not supported yet");
        LettuceConnectionFactory sentinel = new LettuceConnectionFactory(
                new RedisSentinelConfiguration("mymaster", java.util.Set.of("127.0.0.1:26379")));
        assertThatThrownBy(() -> SpringDataRLocks.of(sentinel)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Sentinel or Cluster");
        LettuceConnectionFactory unstarted = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", server.port));
        assertThatThrownBy(() -> SpringDataRLocks.of(unstarted)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not started");
    }
}
