package rlock;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import rlock.resp.Cluster;
import rlock.testing.Topology;

/**
 * Redis Cluster with a replica per primary (the harness's {@code cluster}): a holder and two
 * waiters across {@code CLUSTER FAILOVER} of the key's primary and across a kill -9 of it with
 * promotion (SentinelTest's scenario: fenced, the holder keeps its lock, tokens rise); a
 * MultiLock with a hash tag, and the clear error without one.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterFailoverTest {
    static Topology topology;

    @BeforeAll
    static void start() throws Exception {
        topology = Topology.start("cluster");
    }

    @AfterAll
    static void stop() {
        if (topology != null) {
            topology.close();
        }
    }

    static String seed() {
        Map<String, Object> any = topology.nodes().stream().filter(n -> "primary".equals(n.get("role"))).findFirst().get();
        return "redis://127.0.0.1:" + Topology.port(any);
    }

    /** The port of the primary serving {@code key}'s slot now. */
    static int primaryOf(String key) {
        int slot = Cluster.slot(key);
        for (Map<String, Object> node : topology.nodes()) {
            if (!"primary".equals(node.get("role")) || !(node.get("slots") instanceof List<?> ranges)) {
                continue;
            }
            for (Object range : ranges) {
                List<?> r = (List<?>) range;
                if (slot >= ((Number) r.get(0)).intValue() && slot <= ((Number) r.get(1)).intValue()) {
                    return Topology.port(node);
                }
            }
        }
        throw new AssertionError("no primary serves slot " + slot);
    }

    @Test
    void aMultiLockNeedsAHashTag() throws Exception {
        try (RLockClient rlock = RLockClient.create(seed())) {
            MultiLock tagged = rlock.getMultiLock(rlock.getLock("{order}:1"), rlock.getLock("{order}:2"));
            assertTrue(tagged.tryLock(1, 10, TimeUnit.SECONDS));
            tagged.unlock();
            MultiLock spread = rlock.getMultiLock(rlock.getLock("order:1"), rlock.getLock("order:2"));
            RLockException e = assertThrows(RLockException.class, spread::tryLock);
            assertTrue("CROSSSLOT".equals(e.code()) && e.getMessage().contains("hash tag, e.g. {order}:1"), e.getMessage());
        }
    }

    @Test
    @Order(1)
    @Timeout(150)
    void holderAndWaitersAcrossClusterFailover() throws Exception {
        String key = "cluster-failover";
        SentinelTest.acrossFailover(seed(), key, () -> primaryOf(key), () -> topology.command("failover", "key", key));
    }

    @Test
    @Order(2)
    @Timeout(150)
    void holderAndWaitersAcrossKillOfThePrimary() throws Exception {
        String key = "cluster-kill";
        SentinelTest.acrossFailover(seed(), key, () -> primaryOf(key), () -> {
            topology.command("kill", "port", primaryOf(key));
            topology.command("await_promotion", "key", key);
        });
    }
}
