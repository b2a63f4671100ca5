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
import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;
import io.rlock.testing.Topology;

/**
 * Redis Sentinel (the harness's {@code sentinel}: a primary, a replica, three sentinels):
 * clients connect with a {@code redis-sentinel://} URI, and a holder and two waiters (one in
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
    void theUriAndTheOptionsFindThePrimary() {
        try (RLockClient byUri = TestClients.create(topology.sentinelUri());
                RLockClient byOptions = RLockClient.create(new RLockOptions().sentinel("rlock",
                        topology.sentinelUri().replaceAll(".*//|/.*", "").split(",")))) {
            RLock lock = byUri.getLock("found");
            assertTrue(lock.tryLock());
            assertTrue(byOptions.getLock("found").isLocked());
            lock.unlock();
        }
        assertThrows(IllegalArgumentException.class, () -> TestClients.create("redis-sentinel://127.0.0.1:1/"));
    }

    /** Redisson's {@code Config.useSentinelServers()}, and {@code getConfig()} describing such a client. */
    @Test
    @Order(0)
    void redissonsConfigFindsThePrimary() {
        List<String> sentinels = java.util.Arrays.stream(topology.sentinelUri().replaceAll(".*//|/.*", "").split(","))
                .map(hostPort -> "redis://" + hostPort).toList();
        Config config = new Config();
        config.useSentinelServers().setMasterName("rlock").addSentinelAddress(sentinels.toArray(String[]::new));
        try (RLockClient client = RLockClient.create(config)) {
            RLock lock = client.getLock("configured");
            assertTrue(lock.tryLock());
            Config described = client.getConfig();
            assertEquals("rlock", described.useSentinelServers().getMasterName());
            assertEquals(sentinels, described.useSentinelServers().getSentinelAddresses());
            try (RLockClient alike = RLockClient.create(described)) {
                assertTrue(alike.getLock("configured").isLocked(), "the same primary");
            }
            lock.unlock();
        }
    }

    /**
     * A sentinel that requires a password (another master name over the same primary, so the
     * topology's sentinels ignore it): refused without it, asked with {@code sentinelAuth}.
     */
    @Test
    @Order(0)
    void sentinelsAreAskedWithTheirOwnPassword() throws Exception {
        try (RedisServer sentinel = RedisServer.sentinel("requirepass s3cret",
                "sentinel monitor rlock-secret 127.0.0.1 " + topology.primaryPort() + " 2",
                "sentinel down-after-milliseconds rlock-secret 600000")) {
            String uri = "redis-sentinel://127.0.0.1:" + sentinel.port + "/rlock-secret";
            RLockException refused = assertThrows(RLockException.class, () -> RLockClient.create(uri));
            assertTrue(refused.getMessage().contains("NOAUTH"), refused.getMessage());
            assertThrows(RLockException.class, () -> RLockClient.create(uri, new RLockOptions().sentinelAuth(null, "wrong")));
            try (RLockClient client = RLockClient.create(uri, new RLockOptions().sentinelAuth(null, "s3cret"))) {
                RLock lock = client.getLock("secret");
                assertTrue(lock.tryLock());
                lock.unlock();
            }
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
