package io.rlock.spring.data;

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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * A Cluster factory of each driver (the harness's {@code cluster}: 3 masters, 3 replicas): keys of
 * every master are locked, one session per master, excluded across the two drivers' clients; a
 * waiter on one driver is granted by message when the other driver's holder releases; the
 * application's own template works beside.
 */
class SpringDataClusterTest {
    static Topology topology;

    @BeforeAll
    static void start() throws IOException {
        topology = Topology.start("cluster");
    }

    @AfterAll
    static void stop() {
        topology.close();
    }

    @ParameterizedTest
    @EnumSource(Driver.class)
    @Timeout(120)
    void keysOfEveryMasterAreLockedThroughTheFactory(Driver driver) throws Exception {
        Driver otherDriver = driver == Driver.LETTUCE ? Driver.JEDIS : Driver.LETTUCE;
        RedisConnectionFactory factory = driver.started(Driver.cluster(topology));
        RedisConnectionFactory otherFactory = otherDriver.started(Driver.cluster(topology));
        String prefix = "cluster:" + driver + ":";
        try (RLockClient locks = SpringDataRLocks.of(factory); RLockClient other = SpringDataRLocks.of(otherFactory)) {
            List<RLock> held = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                String name = prefix + i;
                RLock lock = locks.getLock(name);
                lock.lock();
                held.add(lock);
                assertThat(Async.call(() -> other.getLock(name).tryLock()).get(10, TimeUnit.SECONDS)).as(name).isFalse();
            }
            int mastersWithASession = 0;
            for (Map<String, Object> node : topology.nodes()) {
                if ("primary".equals(node.get("role"))) {
                    try (AdminConnection admin = Topology.admin(Topology.port(node))) {
                        if (!Admin.clientsNamed(admin, "rlock-java:" + locks.getId()).isEmpty()) {
                            mastersWithASession++;
                        }
                    }
                }
            }
            assertThat(mastersWithASession).as("12 keys spread over the 3 masters").isEqualTo(3);
            held.forEach(RLock::unlock);

            RLock theirs = other.getLock(prefix + "waited");
            theirs.lock();
            CompletableFuture<Boolean> waiter = Async.call(() -> {
                RLock lock = locks.getLock(prefix + "waited");
                boolean got = lock.tryLock(30, TimeUnit.SECONDS);
                if (got) {
                    lock.unlock();
                }
                return got;
            });
            Admin.eventually(10_000, "the waiter queued on its key's master", () -> queued(prefix + "waited"));
            theirs.unlock();
            assertThat(waiter.get(20, TimeUnit.SECONDS)).isTrue();

            StringRedisTemplate template = Driver.template(factory);
            template.opsForValue().set(prefix + "plain", "the application's");
            assertThat(template.opsForValue().get(prefix + "plain")).isEqualTo("the application's");
        } finally {
            Driver.destroy(factory);
            Driver.destroy(otherFactory);
        }
    }

    private static boolean queued(String key) {
        try {
            for (Map<String, Object> node : topology.nodes()) {
                if ("primary".equals(node.get("role"))) {
                    try (AdminConnection admin = Topology.admin(Topology.port(node))) {
                        Object reply = admin.call("RLOCK.INFO", key);
                        if (!(reply instanceof RespError) && reply != null && Admin.waiters(admin, key) == 1) {
                            return true;
                        }
                    }
                }
            }
            return false;
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
