package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;

/** Deadlock detection, guarded writes and lock-delay (issues 24 and 25) through the Java client. */
class LockSafetyTest extends TwoClients {
    LockSafetyTest() {
        super("safety");
    }

    @Test
    void nestingTwoLocksInOppositeOrdersThrowsDeadlockAtOnce() throws Exception {
        assertDeadlock(RLockClient::getLock, "RLOCK.INFO", "waiters");
    }

    @Test
    void nestingTwoWriteLocksInOppositeOrdersThrowsDeadlockAtOnce() throws Exception {
        assertDeadlock((c, key) -> c.getReadWriteLock(key).writeLock(), "RWLOCK.INFO", "waiting_writers");
    }

    /**
     * A thread of {@code client} holds a and waits for b; this thread (of {@code other}) holds b
     * and asks for a: DEADLOCK within 10 ms, on tryLock and lock alike, nothing queued; the first
     * thread gets b once this one lets it go.
     */
    private void assertDeadlock(BiFunction<RLockClient, String, RLock> lockOf, String info, String waiting)
            throws Exception {
        String a = name + ":a";
        String b = name + ":b";
        lockOf.apply(other, b).lock();
        CompletableFuture<Boolean> first = Async.call(() -> {
            lockOf.apply(client, a).lock();
            try {
                boolean got = lockOf.apply(client, b).tryLock(10, TimeUnit.SECONDS);
                if (got) {
                    lockOf.apply(client, b).unlock();
                }
                return got;
            } finally {
                lockOf.apply(client, a).unlock();
            }
        });
        eventually(5000, "the first thread waits for b", () -> waiting(info, b, waiting) == 1);

        long start = System.nanoTime();
        DeadlockException e = assertThrows(DeadlockException.class,
                () -> lockOf.apply(other, a).tryLock(10, TimeUnit.SECONDS));
        long elapsedMs = (System.nanoTime() - start) / 1_000_000;
        // At once, not after the wait's 10 s: a bound far below it, wide enough for a loaded machine
        // (10 ms failed once there at 14 ms).
        assertTrue(elapsedMs < 2_000, "DEADLOCK came after " + elapsedMs + " ms, not at once");
        assertEquals("DEADLOCK", e.code());
        assertTrue(e.getMessage().startsWith("DEADLOCK this wait would close a cycle:"), e.getMessage());
        assertTrue(e.getMessage().contains(a) && e.getMessage().contains(b), e.getMessage());
        assertThrows(DeadlockException.class, () -> lockOf.apply(other, a).lock(), "lock() too");
        assertEquals(0, waiting(info, a, waiting), "the refused waits were not queued");
        assertEquals(1, waiting(info, b, waiting), "the first thread keeps waiting");

        lockOf.apply(other, b).unlock();
        assertTrue(first.get(5, TimeUnit.SECONDS), "the first thread gets b");
    }

    private static long waiting(String info, String key, String field) {
        Map<String, Object> map = Admin.info(admin, info, key);
        return map == null ? 0 : (Long) map.get(field);
    }

    @Test
    void aGuardedWriteRunsOnlyWhileTheLockIsHeldWithItsToken() throws Exception {
        String data = name + ":data";
        RLock lock = client.getLock(name);
        assertThrows(IllegalMonitorStateException.class, () -> lock.guard("SET", data, "0"), "not held: nothing sent");
        lock.lock();
        assertEquals("OK", Admin.text(lock.guard("SET", data, "1")));
        assertEquals(2L, lock.guard("INCR", data), "the inner reply");
        assertEquals("2", get(data));

        RLock theirs = other.getLock(name);
        assertTrue(theirs.forceUnlock());
        theirs.lock();
        LockLostException lost = assertThrows(LockLostException.class, () -> lock.guard("SET", data, "stale"));
        assertTrue(lost.getMessage().startsWith("NOTOWNER"), lost.getMessage());
        assertEquals("2", get(data), "the old holder's write did not run");
        assertEquals("OK", Admin.text(theirs.guard("SET", data, "3")));
        assertEquals("3", get(data));
        RLockException refused = assertThrows(RLockException.class, () -> theirs.guard("GET", data));
        assertTrue(refused.getMessage().contains("write"), "only writes: " + refused.getMessage());
        theirs.unlock();
    }

    private static String get(String key) {
        return Admin.text(Admin.call(admin, "GET", key));
    }

    @Test
    void aLeaseEndUnderALockDelayGrantsTheNextWaiterNoSoonerThanTheDelay() throws Exception {
        RLock lock = client.getLock(name).withLockDelay(1, TimeUnit.SECONDS);
        long start = System.nanoTime();
        lock.lock(200, TimeUnit.MILLISECONDS);
        assertEquals(1000L, Admin.info(admin, "RLOCK.INFO", name).get("lockdelay"));
        CompletableFuture<Long> next = Async.call(() -> {
            assertTrue(other.getLock(name).tryLock(5, 5, TimeUnit.SECONDS));
            return (System.nanoTime() - start) / 1_000_000;
        });
        long grantedMs = next.get(5, TimeUnit.SECONDS);
        assertTrue(grantedMs >= 1200, "granted " + grantedMs + " ms after the 200 ms lease began");
        assertTrue(grantedMs < 2200, "granted " + grantedMs + " ms after: the delay is 1 s");
    }

    @Test
    void aReleaseByTheOwnerSkipsTheLockDelay() throws Exception {
        RLock lock = client.getLock(name).withLockDelay(1, TimeUnit.SECONDS);
        lock.lock();
        CompletableFuture<Long> next = Async.call(() -> {
            long asked = System.nanoTime();
            assertTrue(other.getLock(name).tryLock(5, 5, TimeUnit.SECONDS));
            return (System.nanoTime() - asked) / 1_000_000;
        });
        eventually(5000, "the next waiter queues", () -> waiting("RLOCK.INFO", name, "waiters") == 1);
        long released = System.nanoTime();
        lock.unlock();
        long waitedMs = next.get(5, TimeUnit.SECONDS);
        assertTrue((System.nanoTime() - released) / 1_000_000 < 500, "granted at the release, not after the delay ("
                + waitedMs + " ms of waiting)");
        assertThrows(UnsupportedOperationException.class,
                () -> client.getReadWriteLock(name + ":rw").writeLock().withLockDelay(1, TimeUnit.SECONDS));
    }
}
