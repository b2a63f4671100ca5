package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;

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
