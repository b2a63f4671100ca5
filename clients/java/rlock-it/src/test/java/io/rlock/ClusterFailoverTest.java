package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import io.lettuce.core.cluster.SlotHash;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.Topology;

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
        return topology.seedUri();
    }

    /** The port of the primary serving {@code key}'s slot now. */
    static int primaryOf(String key) {
        int slot = SlotHash.getSlot(key); // Lettuce's CRC16 of the hash tag
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
        try (RLockClient rlock = TestClients.create(seed())) {
            MultiLock tagged = rlock.getMultiLock(rlock.getLock("{order}:1"), rlock.getLock("{order}:2"));
            assertTrue(tagged.tryLock(1, 10, TimeUnit.SECONDS));
            tagged.unlock();
            MultiLock spread = rlock.getMultiLock(rlock.getLock("order:1"), rlock.getLock("order:2"));
            RLockException e = assertThrows(RLockException.class, spread::tryLock);
            assertTrue("CROSSSLOT".equals(e.code()) && e.getMessage().contains("hash tag, e.g. {order}:1"), e.getMessage());
        }
    }

    /** Whether {@code key} exists on the primary serving its slot. */
    static boolean onItsPrimary(String key) throws Exception {
        try (AdminConnection primary = Topology.admin(primaryOf(key))) {
            return Long.valueOf(1).equals(Admin.call(primary, "EXISTS", key));
        }
    }

    /**
     * Every type on three primaries, each key on its slot's primary: read and write locks,
     * both semaphores, a latch counted down by one client and awaited by another, an election,
     * a guarded write (its data key in the lock's slot by a hash tag).
     */
    @Test
    void everyTypeWorksOnItsSlotsPrimary() throws Exception {
        try (RLockClient rlock = TestClients.create(seed()); RLockClient other = TestClients.create(seed())) {
            java.util.Set<Integer> primaries = new java.util.HashSet<>();
            RReadWriteLock rw = rlock.getReadWriteLock("every:rw");
            RReadWriteLock otherRw = other.getReadWriteLock("every:rw");
            rw.readLock().lock();
            assertTrue(otherRw.readLock().tryLock(), "readers share");
            otherRw.readLock().unlock();
            assertFalse(otherRw.writeLock().tryLock(), "a writer is excluded by the reader");
            assertTrue(onItsPrimary("every:rw"));
            primaries.add(primaryOf("every:rw"));
            rw.readLock().unlock();
            assertTrue(otherRw.writeLock().tryLock());
            otherRw.writeLock().unlock();

            ROwnedSemaphore semaphore = rlock.getOwnedSemaphore("every:sem2");
            assertTrue(semaphore.trySetPermits(2));
            semaphore.acquire(2);
            assertFalse(other.getOwnedSemaphore("every:sem2").tryAcquire());
            assertTrue(onItsPrimary("every:sem2"));
            primaries.add(primaryOf("every:sem2"));
            semaphore.release(2);
            assertEquals(2, other.getOwnedSemaphore("every:sem2").availablePermits());

            RPermitExpirableSemaphore expirable = rlock.getPermitExpirableSemaphore("every:permits");
            expirable.trySetPermits(1);
            String permit = expirable.acquire();
            assertEquals(null, other.getPermitExpirableSemaphore("every:permits").tryAcquire());
            assertTrue(onItsPrimary("every:permits"));
            primaries.add(primaryOf("every:permits"));
            other.getPermitExpirableSemaphore("every:permits").release(permit);

            RCountDownLatch latch = rlock.getCountDownLatch("every:latch");
            assertTrue(latch.trySetCount(1));
            java.util.concurrent.CompletableFuture<Boolean> awaiting = Async.call(
                    () -> other.getCountDownLatch("every:latch").await(10, TimeUnit.SECONDS));
            assertTrue(onItsPrimary("every:latch"));
            primaries.add(primaryOf("every:latch"));
            latch.countDown();
            assertTrue(awaiting.get(10, TimeUnit.SECONDS));

            Election election = rlock.getElection("every:election", "first");
            long term = election.campaign();
            assertEquals("first", other.getElection("every:election", "second").leader().candidate());
            assertEquals(-1, other.getElection("every:election", "second").campaign(10, TimeUnit.MILLISECONDS));
            primaries.add(primaryOf("every:election"));
            assertTrue(election.resign());
            assertTrue(other.getElection("every:election", "second").campaign(1, TimeUnit.SECONDS) > term);

            RLock guardLock = rlock.getLock("{every:guard}lock");
            guardLock.lock();
            guardLock.guard("SET", "{every:guard}data", "written");
            try (AdminConnection primary = Topology.admin(primaryOf("{every:guard}lock"))) {
                assertEquals("written", Admin.text(Admin.call(primary, "GET", "{every:guard}data")));
            }
            primaries.add(primaryOf("{every:guard}lock"));
            guardLock.unlock();
            assertEquals(3, primaries.size(), "the keys were on every primary");
        }
    }

    /**
     * Confirmation on the Cluster: with the replica of the key's primary stopped (SIGSTOP), an
     * acquisition, a MultiLock and a semaphore's permits fail with NotConfirmedException in about
     * the timeout and leave nothing held; with it running they are confirmed.
     */
    @Test
    @Order(0)
    void withItsReplicaStoppedNoAcquisitionOnTheClusterIsReportedHeld() throws Exception {
        String key = "{cluster-confirm}lock";
        int primary = primaryOf(key);
        int replica = replicaOf(primary);
        try (RLockClient rlock = TestClients.create(seed(),
                new RLockOptions().confirm(Confirm.auto().timeout(java.time.Duration.ofMillis(300))));
                AdminConnection admin = Topology.admin(primary)) {
            RLock lock = rlock.getLock(key);
            MultiLock multi = rlock.getMultiLock(rlock.getLock("{cluster-confirm}a"), rlock.getLock("{cluster-confirm}b"));
            ROwnedSemaphore semaphore = rlock.getOwnedSemaphore("{cluster-confirm}sem");
            try {
                assertTrue(semaphore.trySetPermits(1));
            } catch (NotConfirmedException slowReplica) {
                // Set-up only: the permits stand on the primary, confirmed or not (a loaded
                // replica answered after the 300 ms once, in a make test run of 2026-12-07).
            }
            assertEquals(1, semaphore.availablePermits(), "the permits are set");
            // What this step needs is one grant confirmed while the replica runs. On a loaded
            // machine the replica can take longer than the 300 ms timeout to answer (it failed so
            // once, replica running), so it tries until one grant is confirmed, up to 60 s.
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            boolean confirmed = false;
            while (!confirmed && System.nanoTime() - until < 0) {
                try {
                    confirmed = lock.tryLock();
                } catch (NotConfirmedException slowReplica) {
                    assertEquals(null, Admin.info(admin, "RLOCK.INFO", key), "an unconfirmed grant is undone");
                }
            }
            assertTrue(confirmed, "confirmed with the replica running");
            lock.unlock();
            topology.pause(replica);
            try {
                for (org.junit.jupiter.api.function.Executable acquire : List.<org.junit.jupiter.api.function.Executable>of(
                        lock::tryLock, multi::lock, () -> semaphore.acquire())) {
                    ConfirmationTest.unconfirmedWithin300Ms(acquire);
                }
                assertEquals(null, Admin.info(admin, "RLOCK.INFO", key));
                assertEquals(null, Admin.info(admin, "RLOCK.INFO", "{cluster-confirm}a"));
                assertEquals(1, semaphore.availablePermits());
            } finally {
                topology.resume(replica);
            }
        }
    }

    @Test
    @Order(1)
    @Timeout(150)
    void holdersAndWaitersAcrossClusterFailover() throws Exception {
        String key = "{cluster-failover}";
        FailoverCheck.run(seed(), "cluster-failover", () -> primaryOf(key), () -> topology.command("failover", "key", key));
    }

    @Test
    @Order(2)
    @Timeout(150)
    void holdersAndWaitersAcrossKillOfThePrimaryAndAnUnsyncedHoldingToldItLost() throws Exception {
        String key = "{cluster-kill}";
        String uri = seed();
        FailoverCheck.run(uri, "cluster-kill", () -> primaryOf(key), () -> FailoverCheck.killWithAnUnsyncedHolding(
                topology, uri, "{cluster-kill}unsynced", primaryOf(key), replicaOf(primaryOf(key)),
                () -> topology.command("await_promotion", "key", key)));
    }

    /** The port of the replica of the primary on {@code port}. */
    static int replicaOf(int port) {
        Object id = topology.nodes().stream().filter(n -> Topology.port(n) == port).findFirst().orElseThrow().get("id");
        return Topology.port(topology.nodes().stream().filter(n -> id.equals(n.get("primary_id"))).findFirst().orElseThrow());
    }
}
