package rlock;

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
import rlock.resp.RespConnection;
import rlock.testing.Admin;
import rlock.testing.Topology;

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

    /** The fenced resource: refuses a token below the highest seen, and a second holder. */
    static final class Fence {
        private long highest;
        private int inside;

        synchronized void enter(long token) {
            assertTrue(token >= highest, "token " + token + " below " + highest);
            assertEquals(0, inside, "two holders at once");
            inside++;
            highest = token;
        }

        synchronized void exit() {
            inside--;
        }
    }

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
        try (RLockClient byUri = RLockClient.create(topology.sentinelUri());
                RLockClient byOptions = RLockClient.create(new RLockOptions().sentinel("rlock",
                        topology.sentinelUri().replaceAll(".*//|/.*", "").split(",")))) {
            RLock lock = byUri.getLock("found");
            assertTrue(lock.tryLock());
            assertTrue(byOptions.getLock("found").isLocked());
            lock.unlock();
        }
        assertThrows(IllegalArgumentException.class, () -> RLockClient.create("redis-sentinel://127.0.0.1:1/"));
    }

    @Test
    @Order(1)
    @Timeout(120)
    void holderAndWaitersAcrossSentinelFailover() throws Exception {
        acrossFailover(topology.sentinelUri(), "sentinel-failover", topology::primaryPort, () -> topology.command("failover"));
    }

    @Test
    @Order(2)
    @Timeout(120)
    void holderAndWaitersAcrossKillOfThePrimary() throws Exception {
        acrossFailover(topology.sentinelUri(), "sentinel-kill", topology::primaryPort, () -> {
            topology.command("kill", "port", topology.primaryPort());
            topology.command("await_promotion");
        });
    }

    interface Failover {
        void run() throws Exception;
    }

    /**
     * A holder and two waiters of {@code key} (clients of {@code uri}) across {@code failover}:
     * see the class comment. {@code primaryOf} is the port of the key's primary now.
     */
    static void acrossFailover(String uri, String key, java.util.function.IntSupplier primaryOf, Failover failover) throws Exception {
        int oldPrimary = primaryOf.getAsInt();
        List<RLockClient> clients = new ArrayList<>();
        ExecutorService threads = Executors.newFixedThreadPool(3);
        List<LostLock> lost = new CopyOnWriteArrayList<>();
        List<Long> tokens = new CopyOnWriteArrayList<>();
        Fence FENCE = new Fence();
        try {
            for (int i = 0; i < 3; i++) {
                clients.add(RLockClient.create(uri));
            }
            clients.get(0).addLockLostListener(lost::add);
            RLock held = clients.get(0).getLock(key);
            long first = threads.submit(() -> {
                held.lock();
                FENCE.enter(held.getToken());
                return held.getToken();
            }).get(10, TimeUnit.SECONDS);
            List<Future<Long>> waiters = new ArrayList<>();
            for (int i = 1; i < 3; i++) {
                RLock lock = clients.get(i).getLock(key);
                boolean blocked = i == 1;
                waiters.add(threads.submit(() -> {
                    if (blocked) {
                        lock.lock();
                    } else {
                        assertTrue(lock.tryLock(60, -1, TimeUnit.SECONDS));
                    }
                    long token = lock.getToken();
                    FENCE.enter(token);
                    tokens.add(token);
                    FENCE.exit();
                    lock.unlock();
                    return token;
                }));
                try (RespConnection primary = Topology.admin(oldPrimary)) {
                    long queued = i;
                    Admin.eventually(10_000, "waiter " + i + " queued", () -> Admin.waiters(primary, key) == queued);
                }
            }

            failover.run();
            assertNotEquals(oldPrimary, primaryOf.getAsInt(), "a new primary");

            // The holder: still holding on the new primary (its confirmed holding re-bound), or told it lost it.
            threads.submit(() -> {
                if (held.isHeldByCurrentThread()) {
                    assertEquals(first, held.getToken());
                    FENCE.exit();
                    held.unlock();
                } else {
                    Admin.eventually(10_000, "the loss reported", () -> !lost.isEmpty());
                    FENCE.exit();
                    assertThrows(IllegalMonitorStateException.class, held::unlock);
                }
                return null;
            }).get(60, TimeUnit.SECONDS);
            for (Future<Long> waiter : waiters) {
                assertTrue(waiter.get(60, TimeUnit.SECONDS) > first, "served after the holder, with a higher token");
            }
            assertTrue(tokens.get(1) > tokens.get(0), "tokens rise: " + tokens);
            assertTrue(lost.isEmpty(), "the confirmed holding survived the failover: " + lost);
        } finally {
            threads.shutdownNow();
            clients.forEach(RLockClient::close);
        }
    }
}
