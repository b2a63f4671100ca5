package rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static rlock.testing.Admin.eventually;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import rlock.testing.Admin;
import rlock.testing.Async;

class ReadWriteLockTest extends TwoClients {
    ReadWriteLockTest() {
        super("rw");
    }

    private Map<String, Object> info() {
        return Admin.info(admin, "RWLOCK.INFO", name);
    }

    private long waiting(String field) {
        Map<String, Object> info = info();
        return info == null ? 0 : (Long) info.get(field);
    }

    @Test
    void readersShareAndExcludeWriters() throws Exception {
        RReadWriteLock rw = client.getReadWriteLock(name);
        rw.readLock().lock();
        rw.readLock().lock();
        assertEquals(2, rw.readLock().getHoldCount());
        assertTrue(Async.call(() -> other.getReadWriteLock(name).readLock().tryLock()).get(), "a second reader enters");
        assertFalse(Async.call(() -> other.getReadWriteLock(name).writeLock().tryLock()).get(), "a writer waits for readers");
        assertTrue(rw.readLock().isLocked());
        assertFalse(rw.writeLock().isLocked());
        assertTrue(rw.readLock().isHeldByCurrentThread());
        assertFalse(rw.writeLock().isHeldByCurrentThread());
        assertTrue(rw.readLock().getToken() > 0);
        rw.readLock().unlock();
        rw.readLock().unlock();
        assertThrows(IllegalMonitorStateException.class, () -> rw.readLock().unlock());
    }

    @Test
    void aWriterExcludesEveryoneAndReEnters() throws Exception {
        RReadWriteLock rw = client.getReadWriteLock(name);
        rw.writeLock().lock();
        rw.writeLock().lock();
        assertEquals(2, rw.writeLock().getHoldCount());
        assertTrue(rw.writeLock().isLocked());
        assertFalse(rw.readLock().isLocked());
        assertFalse(Async.call(() -> other.getReadWriteLock(name).readLock().tryLock()).get());
        assertFalse(Async.call(() -> rw.writeLock().tryLock()).get(), "another thread of this client is excluded");
        java.util.concurrent.ExecutionException foreign = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> Async.run(() -> rw.writeLock().unlock()).get());
        assertTrue(foreign.getCause() instanceof IllegalMonitorStateException);
        rw.writeLock().unlock();
        rw.writeLock().unlock();
        assertNull(info());
    }

    @Test
    void downgradeIsAllowedAndUpgradeRefusedAtOnce() throws Exception {
        RReadWriteLock rw = client.getReadWriteLock(name);
        rw.writeLock().lock();
        rw.readLock().lock();
        rw.writeLock().unlock();
        assertTrue(rw.readLock().isHeldByCurrentThread(), "still reading after the write lock went");
        assertTrue(Async.call(() -> other.getReadWriteLock(name).readLock().tryLock()).get(), "other readers enter");
        long start = System.nanoTime();
        RLockException refused = assertThrows(RLockException.class, () -> rw.writeLock().lock());
        assertTrue((System.nanoTime() - start) / 1_000_000 < 1000, "refused at once");
        assertTrue(refused.getMessage().contains("holds the read lock"), refused.getMessage());
        rw.readLock().unlock();
    }

    @Test
    void aWaitingWriterKeepsNewReadersOutAndIsServedFirst() throws Exception {
        RReadWriteLock rw = client.getReadWriteLock(name);
        rw.readLock().lock();
        CompletableFuture<Boolean> writer = Async.call(() -> {
            RLock write = other.getReadWriteLock(name).writeLock();
            boolean got = write.tryLock(10, TimeUnit.SECONDS);
            Thread.sleep(100);
            write.unlock();
            return got;
        });
        eventually(5000, "the writer queued", () -> waiting("waiting_writers") == 1);
        assertFalse(Async.call(() -> other.getReadWriteLock(name).readLock().tryLock()).get(),
                "a new reader does not pass the waiting writer");
        CompletableFuture<Long> reader = Async.call(() -> {
            RLock read = client.getReadWriteLock(name).readLock();
            read.lock();
            long at = System.nanoTime();
            read.unlock();
            return at;
        });
        eventually(5000, "the reader queued behind", () -> waiting("waiting_readers") == 1);
        rw.readLock().unlock();
        assertTrue(writer.get(5, TimeUnit.SECONDS));
        reader.get(5, TimeUnit.SECONDS);
        eventually(2000, "all gone", () -> info() == null);
    }

    @Test
    void forceUnlockAndTimeToLive() throws Exception {
        RReadWriteLock rw = client.getReadWriteLock(name);
        rw.writeLock().lock(5, TimeUnit.SECONDS);
        long ttl = rw.writeLock().remainTimeToLive();
        assertTrue(ttl > 4000 && ttl <= 5000, "ttl " + ttl);
        assertTrue(other.getReadWriteLock(name).writeLock().forceUnlock());
        assertNull(info());
        assertFalse(rw.writeLock().isHeldByCurrentThread());
        assertEquals(-2, rw.readLock().remainTimeToLive());
    }

    @Test
    void aClosedClientReleasesItsReadersAtOnce() throws Exception {
        Async.run(() -> other.getReadWriteLock(name).readLock().lock()).get();
        CompletableFuture<Void> writer = Async.run(() -> client.getReadWriteLock(name).writeLock().lock());
        eventually(5000, "the writer queued", () -> waiting("waiting_writers") == 1);
        other.close();
        writer.get(2, TimeUnit.SECONDS);
    }
}
