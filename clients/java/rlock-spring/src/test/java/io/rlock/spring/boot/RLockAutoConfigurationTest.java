package io.rlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.spring.ServerFixture;
import io.rlock.spring.integration.RLockRegistry;
import io.rlock.spring.shedlock.RLockProvider;
import net.javacrumbs.shedlock.core.LockProvider;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

/** What the auto-configuration builds, with Boot's own RedisConnectionFactory (spring.data.redis.*). */
class RLockAutoConfigurationTest {
    static ServerFixture fixture;

    @BeforeAll
    static void start() throws Exception {
        fixture = ServerFixture.start();
    }

    @AfterAll
    static void stop() {
        fixture.close();
    }

    ApplicationContextRunner runner() {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, RLockAutoConfiguration.class))
                .withPropertyValues("spring.data.redis.port=" + fixture.server.port);
    }

    @Test
    void bothBeansFromTheApplicationsConnectionFactory() {
        runner().withPropertyValues("rlock.registry-key=orders").run(context -> {
            assertThat(context).hasSingleBean(RedisConnectionFactory.class);
            assertThat(context).hasSingleBean(RLockRegistry.class).hasSingleBean(RLockProvider.class);
            RLockRegistry registry = context.getBean(RLockRegistry.class);
            registry.obtain("one").lock();
            assertThat(fixture.lockInfo("orders:one")).containsEntry("holds", 1L);
            registry.obtain("one").unlock();
        });
    }

    @Test
    void theRegistryBeanOverBootsJedisFactory() {
        runner().withPropertyValues("spring.data.redis.client-type=jedis", "rlock.registry-key=jedis-orders").run(context -> {
            assertThat(context.getBean(RedisConnectionFactory.class)).isInstanceOf(JedisConnectionFactory.class);
            RLockRegistry registry = context.getBean(RLockRegistry.class);
            Lock lock = registry.obtain("one");
            lock.lock();
            assertThat(fixture.lockInfo("jedis-orders:one")).containsEntry("holds", 1L);
            assertThat(CompletableFuture.supplyAsync(() -> registry.obtain("one").tryLock()).get(10, TimeUnit.SECONDS))
                    .as("another thread is excluded").isFalse();
            lock.unlock();
            assertThat(fixture.lockInfo("jedis-orders:one")).isEmpty();
        });
    }

    @Test
    void theShedLockProviderBeanOverBootsJedisFactory() {
        runner().withPropertyValues("spring.data.redis.client-type=jedis", "rlock.shedlock.environment=jedis").run(context -> {
            assertThat(context.getBean(RedisConnectionFactory.class)).isInstanceOf(JedisConnectionFactory.class);
            LockProvider provider = context.getBean(LockProvider.class);
            LockConfiguration job = new LockConfiguration(ClockProvider.now(), "report", Duration.ofSeconds(30), Duration.ZERO);
            SimpleLock held = provider.lock(job).orElseThrow();
            assertThat(fixture.lockInfo("job-lock:jedis:report")).containsEntry("holds", 1L);
            assertThat(provider.lock(job)).as("the job runs once at a time").isEmpty();
            held.unlock();
            assertThat(fixture.lockInfo("job-lock:jedis:report")).isEmpty();
        });
    }

    @Test
    void eachBeanOnlyWithItsFramework() {
        runner().withClassLoader(new FilteredClassLoader(LockProvider.class)).run(context -> {
            assertThat(context).hasSingleBean(RLockRegistry.class).doesNotHaveBean(LockProvider.class);
        });
        runner().withClassLoader(new FilteredClassLoader(LockRegistry.class)).run(context -> {
            assertThat(context).hasSingleBean(LockProvider.class).doesNotHaveBean(RLockRegistry.class);
        });
    }

    @Test
    void theApplicationsOwnBeansWin() {
        runner().withBean(LockRegistry.class, DefaultLockRegistry::new).run(context -> {
            assertThat(context).doesNotHaveBean(RLockRegistry.class).hasSingleBean(RLockProvider.class);
        });
    }

    @Test
    void nothingWithoutAConnectionFactory() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(RLockAutoConfiguration.class))
                .run(context -> assertThat(context).doesNotHaveBean(RLockRegistry.class)
                        .doesNotHaveBean(LockProvider.class));
    }
}
