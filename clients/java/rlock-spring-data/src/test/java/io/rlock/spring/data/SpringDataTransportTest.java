package io.rlock.spring.data;

import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rlock.LostLock;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.InterruptedReplyWait;
import io.rlock.testing.RedisServer;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * The API over a started factory of each driver (standalone, a password, database 2), beside the
 * application's own template; a factory that cannot be followed is refused before anything connects.
 */
class SpringDataTransportTest {
    static RedisServer server;
    static AdminConnection admin;

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start("--requirepass", "s3cret");
        admin = server.admin("s3cret");
    }

    @AfterAll
    static void stop() {
        admin.close();
        server.close();
    }

    private static RedisStandaloneConfiguration standalone() {
        RedisStandaloneConfiguration standalone = new RedisStandaloneConfiguration("127.0.0.1", server.port);
        standalone.setPassword("s3cret");
        standalone.setDatabase(2);
        return standalone;
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    void locksGoThroughTheFactorysDriverWithItsPasswordAndDatabase(Driver driver) throws Exception {
        RedisConnectionFactory factory = driver.started(standalone());
        String name = "spring:orders:" + driver;
        try (RLockClient locks = SpringDataRLocks.of(factory); RLockClient other = SpringDataRLocks.of(factory)) {
            StringRedisTemplate template = Driver.template(factory);
            RLock lock = locks.getLock(name);
            lock.lock();
            Admin.call(admin, "SELECT", "2");
            assertThat(Admin.info(admin, "RLOCK.INFO", name)).as("in the factory's database 2").isNotNull();
            assertThat(Admin.clientsNamed(admin, "rlock-java:" + locks.getId()))
                    .as("sessions of their own (Lettuce: one RESP3 connection; Jedis: RESP2, commands and subscriber)")
                    .hasSize(driver == Driver.LETTUCE ? 1 : 2);
            Admin.call(admin, "SELECT", "0");
            assertThat(Admin.info(admin, "RLOCK.INFO", name)).isNull();
            CompletableFuture<Boolean> waiter = Async.call(() -> {
                RLock theirs = other.getLock(name);
                boolean got = theirs.tryLock(20, TimeUnit.SECONDS);
                if (got) {
                    theirs.unlock();
                }
                return got;
            });
            Admin.call(admin, "SELECT", "2");
            eventually(10_000, "the other client queued", () -> Admin.waiters(admin, name) == 1);
            Admin.call(admin, "SELECT", "0");
            template.opsForValue().set("spring:plain", "still the application's");
            lock.unlock();
            assertThat(waiter.get(10, TimeUnit.SECONDS)).isTrue();
            assertThat(template.opsForValue().get("spring:plain")).isEqualTo("still the application's");
        } finally {
            Driver.destroy(factory);
        }
    }

    /** A thread interrupted while it waits for a reply on rlock's session leaves the session's holdings bound (issue 41). */
    @ParameterizedTest
    @EnumSource(Driver.class)
    void anInterruptWhileWaitingForAReplyLeavesTheHoldingsBound(Driver driver) throws Exception {
        try (RedisServer own = RedisServer.start()) {
            RedisConnectionFactory factory = driver.started(new RedisStandaloneConfiguration("127.0.0.1", own.port));
            try (RLockClient locks = SpringDataRLocks.of(factory); RLockClient other = SpringDataRLocks.of(factory)) {
                InterruptedReplyWait.check(own, locks, other, "spring:interrupted:" + driver);
            } finally {
                Driver.destroy(factory);
            }
        }
    }

    /**
     * The application's pool and shared connection come and go (dropped here as a pool's eviction,
     * a server's idle timeout or Lettuce's reconnect would drop them): the holding stays bound to
     * rlock's own session. When that session drops, the holder is told, never left believing.
     */
    @ParameterizedTest
    @EnumSource(Driver.class)
    void theApplicationsConnectionsComingAndGoingNeverEndAHoldingSilently(Driver driver) throws Exception {
        RedisConnectionFactory factory = driver.started(standalone());
        String name = "spring:pooled:" + driver;
        BlockingQueue<LostLock> lost = new LinkedBlockingQueue<>();
        try (RLockClient locks = SpringDataRLocks.of(factory)) {
            locks.addLockLostListener(lost::add);
            StringRedisTemplate template = Driver.template(factory);
            template.opsForValue().set(name + ":plain", "before");
            RLock lock = locks.getLock(name);
            lock.lock();
            Admin.call(admin, "SELECT", "2");
            Object bound = Admin.info(admin, "RLOCK.INFO", name).get("watchdog");
            long adminId = (Long) Admin.call(admin, "CLIENT", "ID");
            String ours = " name=rlock-java:" + locks.getId() + " ";
            List<String> application = Admin.text(Admin.call(admin, "CLIENT", "LIST")).lines()
                    .filter(line -> !line.contains(ours) && !line.startsWith("id=" + adminId + " ")).toList();
            assertThat(application).as("the application's own connections").isNotEmpty();
            for (String line : application) {
                Admin.call(admin, "CLIENT", "KILL", "ID", line.substring(3, line.indexOf(' ')));
            }
            eventually(20_000, "the application's template works again", () -> {
                try {
                    template.opsForValue().set(name + ":plain", "after");
                    return true;
                } catch (RuntimeException e) {
                    return false;
                }
            });
            assertThat(Admin.info(admin, "RLOCK.INFO", name).get("watchdog")).as("the same binding").isEqualTo(bound);
            assertThat(lock.isHeldByCurrentThread()).isTrue();
            assertThat(lost).isEmpty();

            Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "0"); // the server's default: no grace
            Admin.call(admin, "CLIENT", "KILL", "ID", String.valueOf(bound));
            LostLock told = lost.poll(20, TimeUnit.SECONDS);
            assertThat(told).as("the holder is told its session dropped with the holding").isNotNull();
            assertThat(told.name()).isEqualTo(name);
            assertThat(lock.isHeldByCurrentThread()).isFalse();
        } finally {
            Admin.call(admin, "SELECT", "0");
            Driver.destroy(factory);
        }
    }

    @Test
    void whatCannotBeFollowedIsRefusedClearly() {
        RedisConnectionFactory another = (RedisConnectionFactory) java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {RedisConnectionFactory.class}, (proxy, method, args) -> null);
        assertThatThrownBy(() -> SpringDataRLocks.of(another)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("is not supported");
        assertThatThrownBy(() -> SpringDataRLocks.of(null)).isInstanceOf(IllegalArgumentException.class);
        LettuceConnectionFactory lettuce = new LettuceConnectionFactory(standalone());
        assertThatThrownBy(() -> SpringDataRLocks.of(lettuce)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not started");
        JedisConnectionFactory jedis = new JedisConnectionFactory(standalone());
        assertThatThrownBy(() -> SpringDataRLocks.of(jedis)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not started");
    }
}
