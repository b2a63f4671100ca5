package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;

/** {@link MultiLock}: several locks all or none ({@code RLOCK.ACQUIREALL} / {@code RELEASEALL}). */
class MultiLockTest extends TwoClients {
    MultiLockTest() {
        super("multi");
    }

    private MultiLock multi(RLockClient of, String... suffixes) {
        RLock[] locks = new RLock[suffixes.length];
        for (int i = 0; i < suffixes.length; i++) {
            locks[i] = of.getLock(name + ":" + suffixes[i]);
        }
        return of.getMultiLock(locks);
    }

    private String key(String suffix) {
        return name + ":" + suffix;
    }

    @Test
    void takesAllOrNone() throws Exception {
        RLock b = other.getLock(key("b"));
        b.lock();
        MultiLock ab = multi(client, "a", "b");
        assertFalse(ab.tryLock(), "b is another's");
        assertFalse(client.getLock(key("a")).isLocked(), "a was not taken either");
        assertFalse(ab.tryLock(100, TimeUnit.MILLISECONDS), "nor within 100 ms");
        assertFalse(client.getLock(key("a")).isLocked(), "nor after the wait");
        assertEquals(0, Admin.waiters(admin, key("a")), "nothing left queued");
        b.unlock();

        assertTrue(ab.tryLock());
        assertTrue(ab.isHeldByCurrentThread());
        assertTrue(client.getLock(key("a")).isHeldByCurrentThread(), "each key is an ordinary holding");
        long[] tokens = ab.getTokens();
        assertEquals(2, tokens.length);
        assertEquals(client.getLock(key("a")).getToken(), tokens[0]);
        assertEquals(client.getLock(key("b")).getToken(), tokens[1]);
        long ttl = ab.remainTimeToLive();
        assertTrue(ttl > 25_000 && ttl <= 30_000, "the watchdog's lease: " + ttl);
        ab.unlock();
        assertFalse(client.getLock(key("a")).isLocked());
        assertFalse(client.getLock(key("b")).isLocked());
        assertEquals(0, client.holdings());
        assertThrows(IllegalMonitorStateException.class, ab::unlock, "not held any more");
    }

    @Test
    void reentersAndLeasesLikeSingleLocks() throws Exception {
        RLock a = client.getLock(key("a"));
        a.lock();
        MultiLock ab = multi(client, "a", "b");
        ab.lock(30, TimeUnit.SECONDS);
        assertEquals(2, a.getHoldCount(), "a re-entered");
        assertEquals(1, ab.getHoldCount());
        long ttl = ab.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= 30_000, "the lease: " + ttl);
        ab.unlock();
        assertTrue(a.isHeldByCurrentThread(), "a's first hold stays");
        assertFalse(client.getLock(key("b")).isLocked());
        a.unlock();
    }

    @Test
    void aWaitIsGrantedEveryKeyInOneStepWhenTheHolderReleases() throws Exception {
        RLock b = other.getLock(key("b"));
        b.lock();
        CompletableFuture<long[]> waiting = Async.call(() -> {
            MultiLock ab = multi(client, "a", "b");
            if (!ab.tryLock(10, 30, TimeUnit.SECONDS)) {
                return null;
            }
            try {
                assertTrue(ab.isHeldByCurrentThread());
                return ab.getTokens();
            } finally {
                ab.unlock();
            }
        });
        eventually(5000, "the multi-lock waits on b", () -> Admin.waiters(admin, key("b")) == 1);
        assertFalse(client.getLock(key("a")).isLocked(), "a waiting request holds nothing");
        assertFalse(other.getLock(key("a")).tryLock(), "the waiting request keeps its place in a's queue");
        assertFalse(waiting.isDone());
        b.unlock();
        long[] tokens = waiting.get(5, TimeUnit.SECONDS);
        assertEquals(2, tokens.length, "tokens for both keys");
        assertTrue(tokens[0] > 0 && tokens[1] > 0);
        assertFalse(client.getLock(key("a")).isLocked(), "released after");
        assertFalse(client.getLock(key("b")).isLocked());
        assertEquals(0, client.waiters());
    }

    @Test
    void aWatchdogWaitIsGrantedAndConfirmed() throws Exception {
        RLock b = other.getLock(key("b"));
        b.lock();
        CompletableFuture<Boolean> waiting = Async.call(() -> {
            MultiLock ab = multi(client, "a", "b");
            ab.lock();
            try {
                return ab.isHeldByCurrentThread() && ab.remainTimeToLive() > 25_000;
            } finally {
                ab.unlock();
            }
        });
        eventually(5000, "the multi-lock waits on b", () -> Admin.waiters(admin, key("b")) == 1);
        b.unlock();
        assertTrue(waiting.get(5, TimeUnit.SECONDS));
    }

    @Test
    void aTimedOutWaitLeavesNothingHeld() throws Exception {
        RLock b = other.getLock(key("b"));
        b.lock();
        MultiLock abc = multi(client, "a", "b", "c");
        long start = System.nanoTime();
        assertFalse(abc.tryLock(300, TimeUnit.MILLISECONDS));
        long elapsedMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(elapsedMs >= 290 && elapsedMs < 3000, "waited " + elapsedMs + " ms");
        for (String suffix : List.of("a", "c")) {
            assertFalse(client.getLock(key(suffix)).isLocked(), suffix + " is free");
        }
        assertTrue(b.isHeldByCurrentThread());
        assertEquals(0, Admin.waiters(admin, key("b")));
        assertEquals(0, client.waiters());
        assertEquals(0, client.holdings());
        b.unlock();
    }

    @Test
    void nestingInOppositeOrdersThrowsDeadlockOnTheSecondWait() throws Exception {
        RLock b = other.getLock(key("b"));
        b.lock();
        // T1 (a thread of client) holds a and multi-locks [b, c]: it waits for b, held by T2
        // (this thread, of other).
        CompletableFuture<long[]> t1 = Async.call(() -> {
            RLock a = client.getLock(key("a"));
            a.lock();
            try {
                MultiLock bc = multi(client, "b", "c");
                if (!bc.tryLock(10, TimeUnit.SECONDS)) {
                    return null;
                }
                long[] tokens = bc.getTokens();
                bc.unlock();
                return tokens;
            } finally {
                a.unlock();
            }
        });
        eventually(5000, "T1 waits on b", () -> Admin.waiters(admin, key("b")) == 1);
        // T2 (of other) holds b and asks for a: the cycle is refused at once.
        long start = System.nanoTime();
        DeadlockException e = assertThrows(DeadlockException.class,
                () -> other.getLock(key("a")).tryLock(10, TimeUnit.SECONDS));
        assertTrue((System.nanoTime() - start) / 1_000_000 < 1000, "at once");
        assertEquals("DEADLOCK", e.code());
        assertTrue(e.getMessage().startsWith("DEADLOCK this wait would close a cycle:"), e.getMessage());
        // And the other way round: a multi-lock that would close the cycle throws too.
        RLock[] ac = {other.getLock(key("a")), other.getLock(key("c"))};
        assertThrows(DeadlockException.class, () -> other.getMultiLock(ac).tryLock(10, TimeUnit.SECONDS));
        assertEquals(0, Admin.waiters(admin, key("a")), "the refused waits were not queued");
        assertFalse(other.getLock(key("c")).isLocked(), "nothing taken");

        b.unlock();
        long[] tokens = t1.get(5, TimeUnit.SECONDS);
        assertEquals(2, tokens.length, "T1 gets b and c once T2 backs off");
    }

    @Test
    void refusesWhatTheServerWould() {
        RLock a = client.getLock(key("a"));
        assertThrows(IllegalArgumentException.class, () -> client.getMultiLock(a, client.getLock(key("a"))));
        assertThrows(IllegalArgumentException.class, () -> client.getMultiLock());
        assertThrows(IllegalArgumentException.class, () -> client.getMultiLock(other.getLock(key("b"))));
        assertThrows(IllegalArgumentException.class,
                () -> client.getMultiLock(client.getReadWriteLock(key("rw")).writeLock()));
        Admin.call(admin, "SET", key("s"), "x");
        RLockException e = assertThrows(RLockException.class, () -> multi(client, "a", "s").tryLock());
        assertEquals("WRONGTYPE", e.code());
        assertFalse(a.isLocked());
        assertArrayEquals(new Object[] {key("a"), key("b")}, multi(client, "a", "b").getNames().toArray());
    }
}
