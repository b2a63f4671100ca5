package io.rlock.spring.data;

import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.LostLock;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.Topology;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * A Sentinel factory of each driver (the harness's {@code sentinel}: a primary, a replica, three
 * sentinels) through {@code SENTINEL FAILOVER}: the sessions go to the primary the driver's
 * sentinel support names (Lettuce's Sentinel URI; Jedis's JedisSentinelPool); the old primary's
 * demotion drops them, the new ones go to the new primary, where the watchdog holding is re-bound
 * to the holder's new session, another client is refused, and the holder's unlock works.
 */
class SpringDataSentinelTest {
    @ParameterizedTest
    @EnumSource(Driver.class)
    @Timeout(180)
    void aWatchdogHoldingGoesThroughASentinelFailover(Driver driver) throws Exception {
        try (Topology topology = Topology.start("sentinel")) {
            RedisConnectionFactory factory = driver.started(Driver.sentinels(topology));
            List<LostLock> lost = new CopyOnWriteArrayList<>();
            String name = "sentinel:held:" + driver;
            try (RLockClient holder = SpringDataRLocks.of(factory); RLockClient other = SpringDataRLocks.of(factory)) {
                holder.addLockLostListener(lost::add);
                RLock lock = holder.getLock(name);
                lock.lock();
                long before = lock.getToken();
                int oldPrimary = topology.primaryPort();
                try (AdminConnection admin = Topology.admin(oldPrimary)) {
                    assertThat(Admin.info(admin, "RLOCK.INFO", name)).as("held on the primary the sentinels name").isNotNull();
                }
                topology.command("failover");
                int newPrimary = topology.primaryPort();
                assertThat(newPrimary).isNotEqualTo(oldPrimary);
                try (AdminConnection admin = Topology.admin(newPrimary)) {
                    Admin.eventually(60_000, "the holding re-bound to the holder's session on the new primary", () -> {
                        Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", name);
                        List<String> sessions = Admin.clientsNamed(admin, "rlock-java:" + holder.getId());
                        return info != null && info.get("watchdog") != null
                                && sessions.stream().anyMatch(line -> line.startsWith("id=" + info.get("watchdog") + " "));
                    });
                }
                assertThat(Async.call(() -> other.getLock(name).tryLock()).get(30, TimeUnit.SECONDS)).isFalse();
                assertThat(lock.isHeldByCurrentThread()).isTrue();
                assertThat(lost).isEmpty();
                lock.unlock();
                RLock next = other.getLock(name);
                assertThat(Async.call(() -> {
                    boolean got = next.tryLock(20, TimeUnit.SECONDS);
                    long token = got ? next.getToken() : -1;
                    if (got) {
                        next.unlock();
                    }
                    return token;
                }).get(30, TimeUnit.SECONDS)).as("taken on the new primary with a higher token").isGreaterThan(before);
                StringRedisTemplate template = Driver.template(factory);
                Admin.eventually(30_000, "the application's own factory follows the failover too", () -> {
                    try {
                        template.opsForValue().set("sentinel:plain", "the application's");
                        return true;
                    } catch (RuntimeException e) {
                        return false;
                    }
                });
            } finally {
                Driver.destroy(factory);
            }
        }
    }
}
