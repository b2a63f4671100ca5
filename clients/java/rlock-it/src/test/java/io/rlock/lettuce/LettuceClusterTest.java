package io.rlock.lettuce;

import io.rlock.testing.TestClients;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.Topology;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The API over the user's {@link RedisClusterClient} (the harness's {@code cluster}: 3 masters,
 * 3 replicas): keys of every master are locked through one session per master, opened with the
 * cluster client's resources; a waiter is granted by message on its key's master; the user's own
 * cluster connection works beside it.
 */
class LettuceClusterTest {
    @Test
    @Timeout(120)
    void keysOfEveryMasterAreLockedThroughTheUsersClusterClient() throws Exception {
        try (Topology topology = Topology.start("cluster")) {
            RedisURI seed = RedisURI.create(topology.seedUri());
            RedisClusterClient cluster = RedisClusterClient.create(seed);
            try (RLockClient locks = LettuceRLocks.of(cluster, seed); RLockClient plain = TestClients.create(topology.seedUri())) {
                List<RLock> held = new ArrayList<>();
                for (int i = 0; i < 12; i++) {
                    RLock lock = locks.getLock("cluster:" + i);
                    lock.lock();
                    held.add(lock);
                    String name = "cluster:" + i;
                    assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(10, TimeUnit.SECONDS)).as(name).isFalse();
                }
                int mastersWithASession = 0;
                for (Map<String, Object> node : topology.nodes()) {
                    if ("primary".equals(node.get("role"))) {
                        try (AdminConnection admin = Topology.admin(Topology.port(node))) {
                            int sessions = Admin.clientsNamed(admin, "rlock-java:" + locks.getId()).size();
                            assertThat(sessions).as("at most one session per master").isLessThanOrEqualTo(1);
                            mastersWithASession += sessions;
                        }
                    }
                }
                assertThat(mastersWithASession).as("12 keys spread over the 3 masters").isEqualTo(3);
                held.forEach(RLock::unlock);

                RLock theirs = plain.getLock("cluster:waited");
                theirs.lock();
                CompletableFuture<Boolean> waiter = Async.call(() -> {
                    RLock lock = locks.getLock("cluster:waited");
                    boolean got = lock.tryLock(30, TimeUnit.SECONDS);
                    if (got) {
                        lock.unlock();
                    }
                    return got;
                });
                Admin.eventually(10_000, "the waiter queued on its key's master", () -> queued(topology, "cluster:waited"));
                theirs.unlock();
                assertThat(waiter.get(20, TimeUnit.SECONDS)).isTrue();

                try (StatefulRedisClusterConnection<String, String> own = cluster.connect()) {
                    own.sync().set("cluster:own", "the user's");
                    assertThat(own.sync().get("cluster:own")).isEqualTo("the user's");
                }
            } finally {
                cluster.shutdown();
            }
        }
    }

    private static boolean queued(Topology topology, String key) {
        try {
            for (Map<String, Object> node : topology.nodes()) {
                if ("primary".equals(node.get("role"))) {
                    try (AdminConnection admin = Topology.admin(Topology.port(node))) {
                        Object reply = admin.call("RLOCK.INFO", key);
                        if (!(reply instanceof io.rlock.internal.transport.RespError) && reply != null
                                && Admin.waiters(admin, key) == 1) {
                            return true;
                        }
                    }
                }
            }
            return false;
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }
}
