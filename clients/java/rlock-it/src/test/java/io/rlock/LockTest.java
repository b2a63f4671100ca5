package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;

/** The plain lock within one JVM: re-entry, exclusion, FIFO, leases, waits, interrupts, tokens. */
class LockTest extends TwoClients {
    LockTest() {
        super("lock");
    }

    private Map<String, Object> info() {
        return Admin.info(admin, "RLOCK.INFO", name);
    }

    @Test
    void aThreadReEntersAndCountsItsHolds() {
        RLock lock = client.getLock(name);
        lock.lock();
        long token = lock.getToken();
        lock.lock();
        assertTrue(client.getLock(name).tryLock(), "another handle of the same thread re-enters too");
        assertEquals(3, lock.getHoldCount());
        assertEquals(token, lock.getToken(), "a re-entry keeps the token");
        assertEquals(3L, info().get("holds"));
        assertEquals(client.getId() + ":" + Thread.currentThread().getId(), Admin.text(info().get("owner")));
        assertNotNull(info().get("watchdog"), "no lease: held by the server's watchdog");
        lock.unlock();
        lock.unlock();
        assertTrue(lock.isLocked());
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
        assertFalse(lock.isLocked());
        assertFalse(lock.isHeldByCurrentThread());
        assertNull(info());
    }

    @Test
    void threadsExcludeEachOther() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        assertFalse(Async.call(lock::tryLock).get(), "another thread of the same client is excluded");
        assertFalse(Async.call(() -> lock.isHeldByCurrentThread()).get());
        assertEquals(0, (int) Async.call(lock::getHoldCount).get());
        assertFalse(Async.call(() -> other.getLock(name).tryLock()).get(), "another client is excluded");
        assertTrue(lock.isHeldByThread(Thread.currentThread().getId()));
        lock.unlock();
        assertTrue(Async.call(() -> other.getLock(name).tryLock(1, TimeUnit.SECONDS)).get());
    }

    @Test
    void countingUnderTheLockLosesNothing() throws Exception {
        int[] counter = {0};
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        List<CompletableFuture<Void>> workers = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            RLockClient which = t % 2 == 0 ? client : other;
            workers.add(Async.run(() -> {
                RLock lock = which.getLock(name);
                for (int i = 0; i < 100; i++) {
                    lock.lock();
                    try {
                        if (inside.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        int seen = counter[0];
                        Thread.yield();
                        counter[0] = seen + 1;
                        inside.decrementAndGet();
                    } finally {
                        lock.unlock();
                    }
                }
            }));
        }
        CompletableFuture.allOf(workers.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        assertEquals(0, overlaps.get());
        assertEquals(800, counter[0]);
    }

    @Test
    void aForeignUnlockIsIllegalMonitorState() throws Exception {
        RLock lock = client.getLock(name);
        IllegalMonitorStateException never = assertThrows(IllegalMonitorStateException.class, lock::unlock);
        assertTrue(never.getMessage().contains("not locked by current thread"), never.getMessage());
        lock.lock();
        ExecutionException foreign = assertThrows(ExecutionException.class, () -> Async.run(lock::unlock).get());
        assertTrue(foreign.getCause() instanceof IllegalMonitorStateException, String.valueOf(foreign.getCause()));
        ExecutionException otherClient = assertThrows(ExecutionException.class, () -> Async.run(() -> other.getLock(name).unlock()).get());
        assertTrue(otherClient.getCause() instanceof IllegalMonitorStateException);
        assertTrue(lock.isHeldByCurrentThread(), "a refused unlock changes nothing");
        assertEquals(1L, info().get("holds"));
        lock.unlock();
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        assertThrows(IllegalMonitorStateException.class, lock::getToken);
    }

    @Test
    void aLeaseEndsTheHolding() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock(300, TimeUnit.MILLISECONDS);
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= 300, "ttl " + ttl);
        assertNull(info().get("watchdog"), "a lease time: no watchdog");
        long start = System.nanoTime();
        assertTrue(Async.call(() -> other.getLock(name).tryLock(5, TimeUnit.SECONDS)).get(), "a waiter enters at the lease end");
        long waited = (System.nanoTime() - start) / 1_000_000;
        assertTrue(waited >= 200 && waited < 1500, "waited " + waited + " ms");
        assertFalse(lock.isHeldByCurrentThread());
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        assertEquals(-2, client.getLock("lock:never-taken").remainTimeToLive());
        RLock lapsing = client.getLock(name + ":lapsing");
        lapsing.lock(200, TimeUnit.MILLISECONDS);
        assertEquals(1, client.holdings());
        eventually(4000, "a lease left to run out is forgotten by the client too", () -> client.holdings() == 0);
    }

    @Test
    void tryLockWithLeaseAndWait() throws Exception {
        RLock lock = client.getLock(name);
        assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 9000 && ttl <= 10000, "ttl " + ttl);
        long start = System.nanoTime();
        assertFalse(Async.call(() -> other.getLock(name).tryLock(200, 5000, TimeUnit.MILLISECONDS)).get());
        long waited = (System.nanoTime() - start) / 1_000_000;
        assertTrue(waited >= 190 && waited < 1500, "gave up after " + waited + " ms");
        assertEquals(0, Admin.waiters(admin, name), "a timed-out wait leaves the queue");
        assertFalse(Async.call(() -> other.getLock(name).tryLock(0, TimeUnit.MILLISECONDS)).get());
        lock.unlock();
    }

    @Test
    void anInterruptLeavesTheQueue() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        CountDownLatch started = new CountDownLatch(1);
        Async.Interruptible waiter = Async.interruptible(() -> {
            started.countDown();
            other.getLock(name).lockInterruptibly();
        });
        started.await();
        eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
        waiter.interrupt();
        waiter.done().get(5, TimeUnit.SECONDS);
        assertEquals(0, Admin.waiters(admin, name), "RLOCK.CANCEL took the entry out");
        lock.unlock();
        assertNull(info(), "nobody was handed the lock");
        assertEquals(0, other.waiters());
        // tryLock(time) is interruptible too; an interrupt before waiting ends it at once.
        lock.lock();
        CompletableFuture<Void> early = Async.run(() -> {
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, () -> other.getLock(name).tryLock(5, TimeUnit.SECONDS));
        });
        early.get(5, TimeUnit.SECONDS);
        lock.unlock();
    }

    @Test
    void lockIgnoresInterruptsUntilItHolds() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        Thread[] waiter = new Thread[1];
        CompletableFuture<Boolean> result = Async.call(() -> {
            waiter[0] = Thread.currentThread();
            RLock mine = other.getLock(name);
            mine.lock();
            boolean flag = Thread.interrupted();
            mine.unlock();
            return flag;
        });
        eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
        waiter[0].interrupt();
        Thread.sleep(100);
        assertEquals(1, Admin.waiters(admin, name), "still waiting");
        lock.unlock();
        assertTrue(result.get(5, TimeUnit.SECONDS), "the interrupt is kept for after");
    }

    @Test
    void forceUnlockAndNewCondition() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        assertThrows(UnsupportedOperationException.class, lock::newCondition);
        assertTrue(Async.call(() -> other.getLock(name).forceUnlock()).get());
        assertFalse(lock.isLocked());
        assertFalse(lock.isHeldByCurrentThread());
        assertFalse(other.getLock(name).forceUnlock());
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
    }

    @Test
    void aWatchdogGrantByMessageIsConfirmedAndRenewed() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        CompletableFuture<Long> waiter = Async.call(() -> {
            RLock mine = other.getLock(name);
            mine.lock();
            return mine.getToken();
        });
        eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
        lock.unlock();
        long token = waiter.get(5, TimeUnit.SECONDS);
        assertEquals(token, (Long) info().get("token"));
        assertNotNull(info().get("watchdog"), "bound to the waiting client's connection");
        other.close();
        eventually(2000, "released when its client closes", () -> info() == null);
    }

    @Test
    void aClosedClientEndsItsWaits() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        CompletableFuture<Void> waiting = Async.run(() -> other.getLock(name).lock());
        eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
        other.close();
        ExecutionException ended = assertThrows(ExecutionException.class, () -> waiting.get(5, TimeUnit.SECONDS));
        assertTrue(ended.getCause() instanceof RLockException, String.valueOf(ended.getCause()));
        eventually(2000, "the queue entry left with the connection", () -> Admin.waiters(admin, name) == 0);
        lock.unlock();
    }

    @Test
    void anEndlessTryLockWaitsWithoutADeadline() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        CompletableFuture<Boolean> waiter = Async.call(() -> other.getLock(name).tryLock(Long.MAX_VALUE, TimeUnit.DAYS));
        eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
        lock.unlock();
        assertTrue(waiter.get(5, TimeUnit.SECONDS));
    }

    @Test
    void anIdleHolderIsKeptAliveByPing() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-idle-ms", "3000");
        try (RLockClient quiet = TestClients.create(server.uri(), new RLockOptions().watchdogLease(java.time.Duration.ofSeconds(1)))) {
            RLock lock = quiet.getLock(name);
            lock.lock();
            String stopsBefore = Admin.infoField(admin, "rlock", "rlock_watchdog_idle_stops");
            // Without a PING every second, the server would stop renewing the 1 s lease after
            // 3-4 s of silence, and the lock would end.
            Thread.sleep(6000);
            assertTrue(lock.isHeldByCurrentThread(), "still held after 6 s without a call of its own");
            assertEquals(stopsBefore, Admin.infoField(admin, "rlock", "rlock_watchdog_idle_stops"));
            lock.unlock();
        } finally {
            Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-idle-ms", "30000");
        }
    }
}
