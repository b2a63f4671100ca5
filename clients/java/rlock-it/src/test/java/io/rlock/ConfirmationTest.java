package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Topology;

/**
 * Confirmation by the replicas on a primary with one replica (the harness's {@code replicated}):
 * confirmed acquisitions are on the replica when the call returns; with the replica stopped
 * (SIGSTOP) no way of acquiring reports a holding (each fails with NotConfirmedException in
 * about the timeout and leaves nothing held), and releases and count-downs say they were not
 * confirmed.
 */
class ConfirmationTest {
    static Topology topology;
    static AdminConnection primary;
    static AdminConnection replica;
    static RLockClient rlock;
    /** The same client without confirmation: sets the stage while the replica is stopped. */
    static RLockClient unconfirmed;

    @BeforeAll
    static void start() throws Exception {
        topology = Topology.start("replicated");
        primary = Topology.admin(topology.primaryPort());
        replica = Topology.admin(topology.replicaPorts().get(0));
        rlock = TestClients.create("redis://127.0.0.1:" + topology.primaryPort(),
                new RLockOptions().confirm(Confirm.auto().timeout(Duration.ofMillis(300))));
        unconfirmed = rlock.withConfirm(Confirm.off());
    }

    @AfterAll
    static void stop() {
        if (rlock != null) {
            rlock.close();
        }
        if (primary != null) {
            primary.close();
            replica.close();
        }
        if (topology != null) {
            topology.close();
        }
    }

    @Test
    void confirmedAcquisitionsAreOnTheReplicaWhenTheCallReturns() throws Exception {
        RLock lock = rlock.getLock("confirmed");
        lock.lock();
        // WAIT answered before lock() returned: the replica has it now, no polling.
        assertNotNull(Admin.info(replica, "RLOCK.INFO", "confirmed"));
        assertTrue(rlock.getReadWriteLock("confirmed-rw").readLock().tryLock(1, 30, TimeUnit.SECONDS));
        assertNotNull(Admin.info(replica, "RWLOCK.INFO", "confirmed-rw"));
        lock.unlock();
        assertNull(Admin.info(replica, "RLOCK.INFO", "confirmed"));
        rlock.getReadWriteLock("confirmed-rw").readLock().unlock();
    }

    @Test
    void grantsByMessageAreConfirmedToo() throws Exception {
        RLock held = rlock.getLock("by-message");
        held.lock();
        CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
            RLock lock = rlock.getLock("by-message");
            try {
                assertTrue(lock.tryLock(10, 30, TimeUnit.SECONDS));
                long token = lock.getToken();
                lock.unlock();
                return token;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Admin.eventually(5000, "the waiter queued", () -> Admin.waiters(primary, "by-message") == 1);
        long first = held.getToken();
        held.unlock();
        assertTrue(waiter.get(10, TimeUnit.SECONDS) > first);
    }

    /** Runs {@code acquire} with the replica stopped: NotConfirmedException after about 300 ms. */
    static NotConfirmedException notConfirmed(Executable acquire) throws Exception {
        int port = topology.replicaPorts().get(0);
        topology.pause(port);
        try {
            return unconfirmedWithin300Ms(acquire);
        } finally {
            resume(port);
        }
    }

    /** {@code acquire}, its only replica stopped, fails with NotConfirmedException (0 of 1) after about 300 ms. */
    static NotConfirmedException unconfirmedWithin300Ms(Executable acquire) {
        long start = System.nanoTime();
        NotConfirmedException e = assertThrows(NotConfirmedException.class, acquire);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(ms >= 250 && ms < 5000, "failed after " + ms + " ms");
        assertEquals(0, e.confirmed());
        assertEquals(1, e.required());
        assertTrue(e.getMessage().contains("confirmed by 0 of 1 replicas within 300 ms"), e.getMessage());
        return e;
    }

    /** Resumes the replica and waits until it has acknowledged everything the primary wrote. */
    static void resume(int port) throws Exception {
        topology.resume(port);
        caughtUp();
    }

    /** Waits until the replica has acknowledged everything the primary wrote. */
    static void caughtUp() throws Exception {
        Admin.eventually(10_000, "the replica caught up", () -> {
            String info = Admin.text(Admin.call(primary, "INFO", "replication"));
            String offset = info.replaceAll("(?s).*master_repl_offset:(\\d+).*", "$1");
            return info.matches("(?s).*slave0:[^\\r\\n]*,offset=" + offset + ",.*");
        });
    }

    @Test
    void withTheReplicaStoppedNoAcquisitionIsReportedHeld() throws Exception {
        RLock lock = rlock.getLock("stopped");
        notConfirmed(lock::tryLock);                                       // at once
        notConfirmed(lock::lock);                                          // a waiting call granted at once
        notConfirmed(() -> lock.tryLock(1, 10, TimeUnit.SECONDS));         // with a lease
        assertNull(Admin.info(primary, "RLOCK.INFO", "stopped"));
        assertThrows(IllegalMonitorStateException.class, lock::getToken);

        RReadWriteLock rw = rlock.getReadWriteLock("stopped-rw");
        notConfirmed(() -> rw.writeLock().lock());
        notConfirmed(() -> rw.readLock().tryLock());
        assertNull(Admin.info(primary, "RWLOCK.INFO", "stopped-rw"));

        ROwnedSemaphore semaphore = rlock.getOwnedSemaphore("stopped-sem");
        assertTrue(semaphore.trySetPermits(2));
        notConfirmed(() -> semaphore.acquire(2));
        assertEquals(2, semaphore.availablePermits());
        RPermitExpirableSemaphore expirable = rlock.getPermitExpirableSemaphore("stopped-sem");
        notConfirmed(() -> expirable.tryAcquire(1, 10, TimeUnit.SECONDS));
        assertEquals(2, semaphore.availablePermits());

        MultiLock multi = rlock.getMultiLock(rlock.getLock("stopped-a"), rlock.getLock("stopped-b"));
        notConfirmed(multi::lock);
        assertNull(Admin.info(primary, "RLOCK.INFO", "stopped-a"));
        assertNull(Admin.info(primary, "RLOCK.INFO", "stopped-b"));

        // A re-entry not confirmed gives back that hold only.
        lock.lock();
        notConfirmed(lock::lock);
        assertEquals(1L, Admin.info(primary, "RLOCK.INFO", "stopped").get("holds"));
        lock.unlock();
    }

    @Test
    void grantsByMessageWithTheReplicaStoppedAreUndone() throws Exception {
        for (boolean watchdog : new boolean[] {true, false}) {
            RLock other = unconfirmed.getLock("stopped-notify");
            CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> other.lock());
            holder.get(5, TimeUnit.SECONDS);
            CompletableFuture<Throwable> waiter = CompletableFuture.supplyAsync(() -> {
                try {
                    RLock lock = rlock.getLock("stopped-notify");
                    if (watchdog) {
                        lock.lock();
                    } else {
                        lock.tryLock(10, 10, TimeUnit.SECONDS);
                    }
                    return null;
                } catch (Throwable e) {
                    return e;
                }
            });
            Admin.eventually(5000, "the waiter queued", () -> Admin.waiters(primary, "stopped-notify") == 1);
            int port = topology.replicaPorts().get(0);
            topology.pause(port);
            try {
                Admin.call(primary, "RLOCK.FORCERELEASE", "stopped-notify"); // granted to the waiter by message
                Throwable thrown = waiter.get(10, TimeUnit.SECONDS);
                assertTrue(thrown instanceof NotConfirmedException, "the grant by message was reported held: " + thrown);
                assertNull(Admin.info(primary, "RLOCK.INFO", "stopped-notify"));
            } finally {
                resume(port);
            }
        }
    }

    /** The permits a counting semaphore's waiter took, or what it threw, run on a thread of its own. */
    static CompletableFuture<Object> countingWaiter(RSemaphore semaphore) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return semaphore.tryAcquire(2, 10, TimeUnit.SECONDS);
            } catch (Throwable e) {
                return e;
            }
        });
    }

    static long notifiedWaiters() {
        return Long.parseLong(Admin.infoField(primary, "rlock", "rlock_notified_waiters"));
    }

    @Test
    void aCountingGrantByMessageIsConfirmedOrUndone() throws Exception {
        String key = "counting-notify";
        RSemaphore semaphore = rlock.getSemaphore(key);
        RSemaphore theirs = unconfirmed.getSemaphore(key);
        assertTrue(theirs.trySetPermits(0));
        caughtUp(); // Valkey 9.1.2 answers the first WAIT after a replica came online only at its next ACK (~1 s)
        CompletableFuture<Object> waiter = countingWaiter(semaphore);
        Admin.eventually(5000, "the waiter queued", () -> notifiedWaiters() == 1);
        theirs.release(2);
        assertEquals(true, waiter.get(10, TimeUnit.SECONDS));
        assertEquals("0", Admin.text(Admin.call(replica, "GET", key)), "on the replica when the call returned");

        CompletableFuture<Object> stopped = countingWaiter(semaphore);
        Admin.eventually(5000, "the waiter queued", () -> notifiedWaiters() == 1);
        int port = topology.replicaPorts().get(0);
        topology.pause(port);
        try {
            theirs.release(2); // granted to the waiter by message
            Object thrown = stopped.get(10, TimeUnit.SECONDS);
            assertTrue(thrown instanceof NotConfirmedException, "the grant by message was reported taken: " + thrown);
            assertTrue(((Throwable) thrown).getMessage().contains("confirmed by 0 of 1 replicas within 300 ms (undone"),
                    ((Throwable) thrown).getMessage());
            assertEquals(2L, Admin.call(primary, "RCSEM.AVAILABLE", key), "the grant was given back");
            // Granted at once, not confirmed: given back as well.
            unconfirmedWithin300Ms(() -> semaphore.tryAcquire(2));
            unconfirmedWithin300Ms(() -> semaphore.tryAcquire(2, 1, TimeUnit.SECONDS));
            assertEquals(2L, Admin.call(primary, "RCSEM.AVAILABLE", key));
        } finally {
            resume(port);
        }
    }

    @Test
    void releasesAndCountDownsSayTheyWereNotConfirmed() throws Exception {
        RLock lock = rlock.getLock("stopped-release");
        lock.lock();
        NotConfirmedException e = notConfirmed(lock::unlock);
        assertTrue(e.getMessage().contains("stands on the primary"), e.getMessage());
        assertNull(Admin.info(primary, "RLOCK.INFO", "stopped-release"));
        RCountDownLatch latch = rlock.getCountDownLatch("stopped-latch");
        assertTrue(latch.trySetCount(2));
        notConfirmed(latch::countDown);
        assertEquals(1, latch.getCount());
    }

    @Test
    void warnOnlyGoesOnAndOffSendsNoWait() throws Exception {
        RLockClient warning = rlock.withConfirm(Confirm.replicas(1).timeout(Duration.ofMillis(200)).warnOnly());
        int port = topology.replicaPorts().get(0);
        topology.pause(port);
        try {
            RLock lock = warning.getLock("warned");
            long start = System.nanoTime();
            assertTrue(lock.tryLock());
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(150), "it waited for the replica");
            long calls = waits();
            RLock off = unconfirmed.getLock("off");
            assertTrue(off.tryLock());
            off.unlock();
            assertEquals(calls, waits(), "Confirm.off() sent a WAIT");
            lock.unlock();
        } finally {
            resume(port);
        }
    }

    /**
     * {@code Confirm.aof()}: {@code WAITAOF 1 n} where the server has it (Redis 7.2+, Valkey) and
     * {@code appendonly yes}: held when the replica's AOF has it, not held (undone) with the
     * replica stopped. Without appendonly, or on a server without WAITAOF (Redis 7.0: the test
     * checks that error, then is skipped), the call fails with a clear error and takes nothing.
     * A replica reports its fsynced offset about once a second (measured on 8.2.3 and Valkey
     * 8.1.8: each WAITAOF 1 1 took ~1 s), so the timeout here is 2.5 s, not the 1 s default.
     */
    @Test
    void aofConfirmationWhereTheServerHasWaitaof() throws Exception {
        RLockClient aof = rlock.withConfirm(Confirm.aof().timeout(Duration.ofMillis(2500)));
        RLock lock = aof.getLock("aof");
        RLockException refused = assertThrows(RLockException.class, lock::tryLock);
        assertTrue(refused.getMessage().contains("Confirm.aof() needs WAITAOF"), refused.getMessage());
        assertNull(Admin.info(primary, "RLOCK.INFO", "aof"), "a refused call took nothing");
        List<?> waitaof = (List<?>) Admin.call(primary, "COMMAND", "INFO", "WAITAOF");
        Assumptions.assumeTrue(waitaof.get(0) != null, "this server ("
                + Admin.infoField(primary, "server", "redis_version") + ") has no WAITAOF: only its refusal was checked");
        assertTrue(refused.getMessage().contains("appendonly is off"), refused.getMessage());
        // appendfsync always: WAITAOF waits for the fsync, once a second under everysec.
        for (AdminConnection server : List.of(primary, replica)) {
            Admin.call(server, "CONFIG", "SET", "appendfsync", "always");
            Admin.call(server, "CONFIG", "SET", "appendonly", "yes");
        }
        try {
            for (AdminConnection server : List.of(primary, replica)) {
                Admin.eventually(20_000, "the first AOF rewrite done", () -> "0".equals(Admin.infoField(server, "persistence", "aof_rewrite_in_progress"))
                        && "0".equals(Admin.infoField(server, "persistence", "aof_rewrite_scheduled")));
            }
            // The node reads its AOF setting at most once a second, and a replica whose AOF was
            // just turned on acknowledges its first fsyncs late: a few attempts.
            String last = null;
            boolean held = false;
            for (int attempt = 0; attempt < 5 && !held; attempt++) {
                try {
                    held = lock.tryLock();
                    last = held ? null : "not granted: " + Admin.info(primary, "RLOCK.INFO", "aof");
                } catch (RLockException e) {
                    last = e.getMessage();
                    Thread.sleep(500);
                }
            }
            assertTrue(held, "not held with WAITAOF: " + last);
            assertNotNull(Admin.info(replica, "RLOCK.INFO", "aof"), "on the replica when the call returned");
            lock.unlock();
            int port = topology.replicaPorts().get(0);
            topology.pause(port);
            try {
                NotConfirmedException e = assertThrows(NotConfirmedException.class, lock::tryLock);
                assertTrue(e.getMessage().contains("confirmed by 0 of 1 replicas within 2500 ms (undone: not held)"), e.getMessage());
                assertNull(Admin.info(primary, "RLOCK.INFO", "aof"));
            } finally {
                resume(port);
            }
        } finally {
            for (AdminConnection server : List.of(primary, replica)) {
                Admin.call(server, "CONFIG", "SET", "appendonly", "no");
                Admin.call(server, "CONFIG", "SET", "appendfsync", "everysec");
            }
        }
    }

    /** WAIT calls the primary has run. */
    static long waits() {
        String stats = Admin.text(Admin.call(primary, "INFO", "commandstats"));
        for (String line : stats.split("\r\n")) {
            if (line.startsWith("cmdstat_wait:calls=")) {
                return Long.parseLong(line.substring(19, line.indexOf(',')));
            }
        }
        return 0;
    }
}
