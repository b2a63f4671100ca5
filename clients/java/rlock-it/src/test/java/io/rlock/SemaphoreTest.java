package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;

/** ROwnedSemaphore and RPermitExpirableSemaphore. */
class SemaphoreTest extends TwoClients {
    /**
     * A time to live that the test sees end, long enough to outlast the calls made before it is read
     * (at 300 ms the key had ended before its PTTL was read at load average 15-20).
     */
    private static final java.time.Duration SHORT_LIFE = java.time.Duration.ofMillis(1500);

    SemaphoreTest() {
        super("sem");
    }

    private long queued() {
        Map<String, Object> info = Admin.info(admin, "RSEM.INFO", name);
        return info == null ? 0 : ((List<?>) info.get("waiters")).size();
    }

    @Test
    void permitsAreCountedAndOwnedByTheThread() throws Exception {
        ROwnedSemaphore semaphore = client.getOwnedSemaphore(name);
        assertTrue(semaphore.trySetPermits(3));
        assertFalse(semaphore.trySetPermits(10), "set once");
        assertEquals(3, semaphore.availablePermits());
        semaphore.acquire();
        semaphore.acquire(2);
        assertEquals(0, semaphore.availablePermits());
        assertFalse(semaphore.tryAcquire());
        assertFalse(Async.call(() -> other.getOwnedSemaphore(name).tryAcquire(100, TimeUnit.MILLISECONDS)).get());
        ExecutionException foreign = assertThrows(ExecutionException.class, () -> Async.run(() -> semaphore.release()).get());
        assertTrue(foreign.getCause() instanceof IllegalMonitorStateException, "another thread holds none of these permits");
        assertThrows(RLockException.class, () -> semaphore.release(4), "more than it holds");
        assertEquals(0, semaphore.availablePermits(), "a refused release changes nothing");
        semaphore.release(2);
        semaphore.release();
        assertEquals(3, semaphore.availablePermits());
        assertThrows(IllegalArgumentException.class, () -> semaphore.acquire(0));
    }

    /** Redisson's trySetPermits with a time to live (its own test checks at the exact boundary, left out). */
    @Test
    void countingPermitsSetWithATimeToLiveEndWithIt() throws Exception {
        RSemaphore semaphore = client.getSemaphore(name);
        assertTrue(semaphore.trySetPermits(2, SHORT_LIFE));
        assertFalse(semaphore.trySetPermits(5, SHORT_LIFE), "set once");
        assertEquals(2, semaphore.availablePermits());
        long ttl = (Long) Admin.call(admin, "PTTL", name);
        assertTrue(ttl > 0 && ttl <= SHORT_LIFE.toMillis(), "the key carries the time to live: " + ttl);
        eventually(10_000, "the permits end with their time to live", () -> !semaphore.isExists());
        assertEquals(0, semaphore.availablePermits());
    }

    /** As Redisson's expire covers its timeout set: a permit held by the watchdog does not outlive its count. */
    @Test
    void expireEndsTheHoldersWithTheCount() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        semaphore.trySetPermits(2);
        semaphore.acquire();
        String holders = "{" + name + "}:rlock:holders"; // docs/semaphore.md, "Layout"
        assertEquals(2L, Admin.call(admin, "EXISTS", name, holders), "the count and the holders hash");
        assertTrue(semaphore.expire(SHORT_LIFE));
        for (String key : List.of(name, holders)) {
            long ttl = (Long) Admin.call(admin, "PTTL", key);
            assertTrue(ttl > 0 && ttl <= SHORT_LIFE.toMillis(), key + " carries the time to live: " + ttl);
        }
        eventually(10_000, "both keys ended", () -> (Long) Admin.call(admin, "EXISTS", name, holders) == 0);
        assertFalse(semaphore.expire(SHORT_LIFE), "nothing left to expire");
    }

    @Test
    void waitersAreServedInOrderAndWholeRequestsFirst() throws Exception {
        ROwnedSemaphore semaphore = client.getOwnedSemaphore(name);
        semaphore.trySetPermits(3);
        semaphore.acquire(3);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> big = Async.run(() -> {
            ROwnedSemaphore mine = other.getOwnedSemaphore(name);
            mine.acquire(3);
            order.add("three");
            mine.release(3);
        });
        eventually(5000, "the request for 3 queued", () -> queued() == 1);
        CompletableFuture<Void> small = Async.run(() -> {
            ROwnedSemaphore mine = other.getOwnedSemaphore(name);
            mine.acquire(1);
            order.add("one");
            mine.release(1);
        });
        eventually(5000, "the request for 1 queued", () -> queued() == 2);
        semaphore.release(1);
        Thread.sleep(100);
        assertEquals(List.of(), order, "one free permit does not let the later request for 1 pass the request for 3");
        semaphore.release(2);
        CompletableFuture.allOf(big, small).get(5, TimeUnit.SECONDS);
        assertEquals(List.of("three", "one"), order);
    }

    @Test
    void addPermitsServesWaiters() throws Exception {
        ROwnedSemaphore semaphore = client.getOwnedSemaphore(name);
        semaphore.trySetPermits(0);
        CompletableFuture<Void> waiter = Async.run(() -> other.getOwnedSemaphore(name).acquire(2));
        eventually(5000, "queued", () -> queued() == 1);
        semaphore.addPermits(2);
        waiter.get(5, TimeUnit.SECONDS);
        assertEquals(0, semaphore.availablePermits());
    }

    @Test
    void permitsComeBackWhenTheirClientDies() throws Exception {
        ROwnedSemaphore semaphore = client.getOwnedSemaphore(name);
        semaphore.trySetPermits(2);
        Async.run(() -> other.getOwnedSemaphore(name).acquire(2)).get();
        assertEquals(0, semaphore.availablePermits());
        CompletableFuture<Void> waiter = Async.run(() -> semaphore.acquire(1));
        eventually(5000, "queued", () -> queued() == 1);
        other.close();
        waiter.get(2, TimeUnit.SECONDS);
        assertEquals(1, semaphore.availablePermits());
    }

    @Test
    void anInterruptedAcquireLeavesTheQueue() throws Exception {
        ROwnedSemaphore semaphore = client.getOwnedSemaphore(name);
        semaphore.trySetPermits(0);
        Async.Interruptible waiter = Async.interruptible(() -> other.getOwnedSemaphore(name).acquire());
        eventually(5000, "queued", () -> queued() == 1);
        waiter.interrupt();
        waiter.done().get(5, TimeUnit.SECONDS);
        assertEquals(0, queued());
        semaphore.addPermits(1);
        assertEquals(1, semaphore.availablePermits(), "nobody took it");
    }

    @Test
    void expirablePermitsHaveIdsAndLeases() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        assertTrue(semaphore.trySetPermits(2));
        String first = semaphore.acquire();
        String second = semaphore.tryAcquire(100, 300, TimeUnit.MILLISECONDS);
        assertNotNull(second);
        assertNotEquals(first, second);
        assertEquals(0, semaphore.availablePermits());
        assertNull(semaphore.tryAcquire());
        long start = System.nanoTime();
        String third = Async.call(() -> other.getPermitExpirableSemaphore(name).tryAcquire(5, TimeUnit.SECONDS)).get();
        long waited = (System.nanoTime() - start) / 1_000_000;
        assertNotNull(third, "the leased permit came back at its lease end");
        assertTrue(waited >= 150 && waited < 2000, "waited " + waited + " ms");
        assertFalse(semaphore.tryRelease(second), "it expired");
        assertThrows(RLockException.class, () -> semaphore.release(second), "as Redisson's RedisException");
        Async.run(() -> semaphore.release(first)).get(); // any thread may release by id
        assertFalse(semaphore.tryRelease(first));
        assertTrue(semaphore.updateLeaseTime(third, 10, TimeUnit.SECONDS));
        assertFalse(semaphore.updateLeaseTime(first, 10, TimeUnit.SECONDS));
        assertEquals(1, semaphore.availablePermits());
        assertTrue(other.getPermitExpirableSemaphore(name).tryRelease(third));
        assertEquals(2, semaphore.availablePermits());
    }
}
