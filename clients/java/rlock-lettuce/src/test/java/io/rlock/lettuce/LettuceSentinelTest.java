package io.rlock.lettuce;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
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

/**
 * A Lettuce Sentinel {@link RedisURI} (the harness's {@code sentinel}: a primary, a replica,
 * three sentinels) through {@code SENTINEL FAILOVER}: each session is opened to the primary
 * Lettuce's sentinels name; the old primary's demotion drops the sessions, the new ones go to the
 * new primary, where the watchdog holding is re-bound (confirmed by the replica before the
 * failover, so it is there), another client is refused, and the holder's unlock works.
 */
class LettuceSentinelTest {
    @Test
    @Timeout(120)
    void aWatchdogHoldingGoesThroughASentinelFailover() throws Exception {
        try (Topology topology = Topology.start("sentinel")) {
            RedisURI uri = sentinelUri(topology);
            RedisClient lettuce = RedisClient.create();
            List<LostLock> lost = new CopyOnWriteArrayList<>();
            try (RLockClient holder = LettuceRLocks.of(lettuce, uri); RLockClient other = LettuceRLocks.of(lettuce, uri)) {
                holder.addLockLostListener(lost::add);
                RLock lock = holder.getLock("sentinel:held");
                lock.lock();
                long before = lock.getToken();
                int oldPrimary = topology.primaryPort();
                topology.command("failover");
                int newPrimary = topology.primaryPort();
                assertThat(newPrimary).isNotEqualTo(oldPrimary);
                try (RespConnection admin = Topology.admin(newPrimary)) {
                    Admin.eventually(30_000, "the holding re-bound to the holder's session on the new primary", () -> {
                        Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", "sentinel:held");
                        List<String> sessions = Admin.clientsNamed(admin, "rlock-java:" + holder.getId());
                        return info != null && info.get("watchdog") != null && sessions.size() == 1
                                && sessions.get(0).startsWith("id=" + info.get("watchdog") + " ");
                    });
                }
                assertThat(Async.call(() -> other.getLock("sentinel:held").tryLock()).get(30, TimeUnit.SECONDS)).isFalse();
                assertThat(lock.isHeldByCurrentThread()).isTrue();
                assertThat(lost).isEmpty();
                lock.unlock();
                RLock next = other.getLock("sentinel:held");
                assertThat(Async.call(() -> {
                    boolean got = next.tryLock(10, TimeUnit.SECONDS);
                    long token = got ? next.getToken() : -1;
                    if (got) {
                        next.unlock();
                    }
                    return token;
                }).get(30, TimeUnit.SECONDS)).as("taken on the new primary with a higher token").isGreaterThan(before);
            } finally {
                lettuce.shutdown();
            }
        }
    }

    /** The topology's sentinels as Lettuce's Sentinel URI (master name {@code rlock}). */
    private static RedisURI sentinelUri(Topology topology) {
        List<?> sentinels = (List<?>) topology.describe().get("sentinels");
        RedisURI.Builder builder = null;
        for (Object entry : sentinels) {
            @SuppressWarnings("unchecked")
            Map<String, Object> sentinel = (Map<String, Object>) entry;
            String host = String.valueOf(sentinel.get("host"));
            int port = Topology.port(sentinel);
            builder = builder == null ? RedisURI.Builder.sentinel(host, port, "rlock") : builder.withSentinel(host, port);
        }
        return builder.build();
    }
}
