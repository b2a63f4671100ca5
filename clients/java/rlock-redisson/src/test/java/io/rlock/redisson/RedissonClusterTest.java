package io.rlock.redisson;

import io.rlock.testing.TestClients;
import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.testing.AdminConnection;
import io.rlock.internal.transport.RespError;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.Topology;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * A Redisson Cluster Config (the harness's {@code cluster}: 3 masters, 3 replicas): each key
 * goes to the master Redisson's slot calculation names, through one session per master opened
 * by that master's Redisson client; a waiter is granted by message on its key's master; a
 * MultiLock's keys share a hash tag; Redisson's own objects work beside it.
 */
class RedissonClusterTest {
    @Test
    @Timeout(180)
    void keysOfEveryMasterAreLockedWhereRedissonRoutesThem() throws Exception {
        try (Topology topology = Topology.start("cluster")) {
            Config config = new Config();
            config.useClusterServers().addNodeAddress(topology.seedUri())
                    .setMasterConnectionMinimumIdleSize(1).setSlaveConnectionMinimumIdleSize(1)
                    .setSubscriptionConnectionMinimumIdleSize(1);
            RedissonClient redisson = Redisson.create(config);
            try (RLockClient locks = RLocks.of(redisson); RLockClient plain = TestClients.create(topology.seedUri())) {
                List<RLock> held = new ArrayList<>();
                for (int i = 0; i < 12; i++) {
                    String name = "cluster:" + i;
                    RLock lock = locks.getLock(name);
                    lock.lock();
                    held.add(lock);
                    assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(10, TimeUnit.SECONDS)).as(name).isFalse();
                    int slot = redisson.getKeys().getSlot(name);
                    assertThat(holdsOn(topology, name)).as(name + " held on the master of slot " + slot)
                            .isEqualTo(Integer.valueOf(redissonMasterPort(redisson, name)));
                }
                int mastersWithASession = 0;
                for (Map<String, Object> node : topology.nodes()) {
                    if ("primary".equals(node.get("role"))) {
                        try (AdminConnection admin = Topology.admin(Topology.port(node))) {
                            int sessions = Admin.clientsNamed(admin, "rlock-java:" + locks.getId()).size();
                            assertThat(sessions).as("one session (calls and subscriber) per master at most").isLessThanOrEqualTo(2);
                            mastersWithASession += sessions > 0 ? 1 : 0;
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
                Admin.eventually(20_000, "the waiter queued on its key's master", () -> waiters(topology, "cluster:waited") == 1);
                theirs.unlock();
                assertThat(waiter.get(30, TimeUnit.SECONDS)).isTrue();

                var both = locks.getMultiLock(locks.getLock("{order}:1"), locks.getLock("{order}:2"));
                assertThat(both.tryLock()).isTrue();
                both.unlock();

                redisson.getBucket("cluster:own").set("the user's");
                assertThat(redisson.getBucket("cluster:own").get()).isEqualTo("the user's");
            } finally {
                redisson.shutdown();
            }
        }
    }

    /** The port of the master Redisson's connection manager serves {@code key} from. */
    private static int redissonMasterPort(RedissonClient redisson, String key) {
        return ((Redisson) redisson).getCommandExecutor().getConnectionManager().getEntry(key).getClient().getConfig().getAddress().getPort();
    }

    /** The port of the master where {@code key} is held, or null. */
    private static Integer holdsOn(Topology topology, String key) throws IOException {
        for (Map<String, Object> node : topology.nodes()) {
            if ("primary".equals(node.get("role"))) {
                try (AdminConnection admin = Topology.admin(Topology.port(node))) {
                    Object reply = admin.call("RLOCK.INFO", key);
                    if (reply != null && !(reply instanceof RespError)) {
                        return Topology.port(node);
                    }
                }
            }
        }
        return null;
    }

    private static long waiters(Topology topology, String key) {
        try {
            Integer port = holdsOn(topology, key);
            if (port == null) {
                return -1;
            }
            try (AdminConnection admin = Topology.admin(port)) {
                return Admin.waiters(admin, key);
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
