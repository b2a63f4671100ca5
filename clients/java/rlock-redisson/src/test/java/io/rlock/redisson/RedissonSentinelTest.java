package io.rlock.redisson;

import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.LostLock;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.internal.resp.RespConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.Topology;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.SentinelServersConfig;

/**
 * A Redisson Sentinel Config (the harness's {@code sentinel}: a primary, a replica, three
 * sentinels) through {@code SENTINEL FAILOVER}: the sessions go to the primary Redisson names;
 * the old primary's demotion drops them, the new ones go to the primary Redisson follows, where
 * the watchdog holding is re-bound, another client is refused, and the holder's unlock works.
 */
class RedissonSentinelTest {
    @Test
    @Timeout(180)
    void aWatchdogHoldingGoesThroughASentinelFailover() throws Exception {
        try (Topology topology = Topology.start("sentinel")) {
            RedissonClient redisson = Redisson.create(sentinelConfig(topology));
            List<LostLock> lost = new CopyOnWriteArrayList<>();
            try (RLockClient holder = RLocks.of(redisson); RLockClient other = RLocks.of(redisson)) {
                holder.addLockLostListener(lost::add);
                RLock lock = holder.getLock("sentinel:held");
                lock.lock();
                long before = lock.getToken();
                int oldPrimary = topology.primaryPort();
                try (RespConnection admin = Topology.admin(oldPrimary)) {
                    assertThat(Admin.clientsNamed(admin, "rlock-java:" + holder.getId())).as("the session is on Redisson's primary").isNotEmpty();
                }
                topology.command("failover");
                int newPrimary = topology.primaryPort();
                assertThat(newPrimary).isNotEqualTo(oldPrimary);
                try (RespConnection admin = Topology.admin(newPrimary)) {
                    Admin.eventually(60_000, "the holding re-bound to the holder's session on the new primary", () -> {
                        Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", "sentinel:held");
                        List<String> sessions = Admin.clientsNamed(admin, "rlock-java:" + holder.getId());
                        return info != null && info.get("watchdog") != null
                                && sessions.stream().anyMatch(line -> line.startsWith("id=" + info.get("watchdog") + " "));
                    });
                }
                assertThat(Async.call(() -> other.getLock("sentinel:held").tryLock()).get(60, TimeUnit.SECONDS)).isFalse();
                assertThat(lock.isHeldByCurrentThread()).isTrue();
                assertThat(lost).isEmpty();
                lock.unlock();
                RLock next = other.getLock("sentinel:held");
                assertThat(Async.call(() -> {
                    boolean got = next.tryLock(20, TimeUnit.SECONDS);
                    long token = got ? next.getToken() : -1;
                    if (got) {
                        next.unlock();
                    }
                    return token;
                }).get(60, TimeUnit.SECONDS)).as("taken on the new primary with a higher token").isGreaterThan(before);
            } finally {
                redisson.shutdown();
            }
        }
    }

    /** The topology's sentinels in a Redisson Config (master name {@code rlock}). */
    private static Config sentinelConfig(Topology topology) {
        Config config = new Config();
        SentinelServersConfig sentinel = config.useSentinelServers().setMasterName(String.valueOf(topology.describe().get("master_name")))
                .setMasterConnectionMinimumIdleSize(1).setSlaveConnectionMinimumIdleSize(1)
                .setSubscriptionConnectionMinimumIdleSize(1);
        for (Object entry : (List<?>) topology.describe().get("sentinels")) {
            @SuppressWarnings("unchecked")
            Map<String, Object> node = (Map<String, Object>) entry;
            sentinel.addSentinelAddress("redis://" + node.get("host") + ":" + Topology.port(node));
        }
        return config;
    }
}
