package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.rlock.lettuce.LettuceRLocks;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;
import io.rlock.testing.Topology;

/**
 * Redis Sentinel (the harness's {@code sentinel}: a primary, a replica, three sentinels):
 * clients connect over Lettuce with a {@code redis-sentinel://} URI, and a holder and two waiters (one in
 * {@code lock()}, one in {@code tryLock(wait, ...)}, both waiting by message) go through
 * {@code SENTINEL FAILOVER} and then a kill -9 of the primary with promotion: the confirmed
 * holder keeps its lock on the new primary (or is told it lost it), a fenced resource never
 * accepts two holders, the waiters are served after the holder, and the tokens rise.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SentinelTest {
    static Topology topology;

    @BeforeAll
    static void start() throws Exception {
        topology = Topology.start("sentinel");
    }

    @AfterAll
    static void stop() {
        if (topology != null) {
            topology.close();
        }
    }

    @Test
    void theUriFindsThePrimary() {
        try (RLockClient byUri = TestClients.create(topology.sentinelUri());
                RLockClient other = TestClients.create(topology.sentinelUri())) {
            RLock lock = byUri.getLock("found");
            assertTrue(lock.tryLock());
            assertTrue(other.getLock("found").isLocked());
            lock.unlock();
        }
        assertThrows(IllegalArgumentException.class, () -> TestClients.create("redis-sentinel://127.0.0.1:1/"));
    }

    /**
     * A sentinel that requires a password (another master name over the same primary, so the
     * topology's sentinels ignore it), over Lettuce: refused without it and with a wrong one,
     * found with the sentinel's own password in Lettuce's {@code RedisURI}.
     */
    @Test
    @Order(0)
    void sentinelsAreAskedWithTheirOwnPassword() throws Exception {
        RedisClient lettuce = RedisClient.create();
        try (RedisServer sentinel = RedisServer.sentinel("requirepass s3cret",
                "sentinel monitor rlock-secret 127.0.0.1 " + topology.primaryPort() + " 2",
                "sentinel down-after-milliseconds rlock-secret 600000")) {
            RedisURI none = RedisURI.Builder.sentinel("127.0.0.1", sentinel.port, "rlock-secret").build();
            RLockException refused = assertThrows(RLockException.class, () -> LettuceRLocks.of(lettuce, none).close());
            assertTrue(refused.getMessage().contains("NOAUTH"), "says why: " + refused.getMessage());
            RedisURI wrong = RedisURI.Builder.sentinel("127.0.0.1", sentinel.port, "rlock-secret", "wrong").build();
            RLockException wrongly = assertThrows(RLockException.class, () -> LettuceRLocks.of(lettuce, wrong).close());
            assertTrue(wrongly.getMessage().contains("WRONGPASS"), "says why: " + wrongly.getMessage());
            RedisURI right = RedisURI.Builder.sentinel("127.0.0.1", sentinel.port, "rlock-secret", "s3cret").build();
            try (RLockClient client = LettuceRLocks.of(lettuce, right)) {
                RLock lock = client.getLock("secret");
                assertTrue(lock.tryLock());
                try (AdminConnection primary = Topology.admin(topology.primaryPort())) {
                    assertEquals(1L, primary.call("EXISTS", "secret"), "on the primary the sentinel names");
                }
                lock.unlock();
            }
        } finally {
            lettuce.shutdown();
        }
    }

    @Test
    @Order(1)
    @Timeout(120)
    void holdersAndWaitersAcrossSentinelFailover() throws Exception {
        FailoverCheck.run(topology.sentinelUri(), "sentinel-failover", topology::primaryPort, () -> topology.command("failover"));
    }

    /** The last failover of the class: it leaves no replica. */
    @Test
    @Order(2)
    @Timeout(150)
    void holdersAndWaitersAcrossKillOfThePrimaryAndAnUnsyncedHoldingToldItLost() throws Exception {
        String uri = topology.sentinelUri();
        FailoverCheck.run(uri, "sentinel-kill", topology::primaryPort, () -> FailoverCheck.killWithAnUnsyncedHolding(
                topology, uri, "sentinel-unsynced", topology.primaryPort(), topology.replicaPorts().get(0),
                () -> topology.command("await_promotion")));
    }
}
