package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.Proxy;

/**
 * Dropped connections: a lost reply is re-sent with the same request id and never counts twice;
 * watchdog holdings are re-bound after a reconnect, or reported lost.
 */
class FailureTest extends OneServer {
    Proxy proxy;
    RLockClient client;
    RLockClient other;
    String name;
    final BlockingQueue<LostLock> lost = new LinkedBlockingQueue<>();

    @BeforeEach
    void connect(TestInfo test) throws Exception {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "0");
        proxy = new Proxy(server.port);
        client = TestClients.create(proxy.uri());
        client.addLockLostListener(lost::add);
        other = TestClients.create(server.uri());
        name = "failure:" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void disconnect() throws Exception {
        client.close();
        other.close();
        proxy.close();
    }

    private Map<String, Object> info() {
        return Admin.info(admin, "RLOCK.INFO", name);
    }

    private long holds() {
        Map<String, Object> info = info();
        return info == null ? 0 : (Long) info.get("holds");
    }

    private long clientConnectionId() {
        List<String> lines = Admin.clientsNamed(admin, "rlock-java:" + client.getId());
        assertEquals(1, lines.size(), "one connection: " + lines);
        String id = lines.get(0).split(" ")[0];
        return Long.parseLong(id.substring("id=".length()));
    }

    /** {@code other} takes the lock with {@code take} on a thread of its own and holds it until {@code release}. */
    private CompletableFuture<Void> heldByOther(Consumer<RLock> take, CompletableFuture<Void> release) throws Exception {
        CompletableFuture<Void> held = new CompletableFuture<>();
        CompletableFuture<Void> holding = Async.run(() -> {
            RLock theirs = other.getLock(name);
            take.accept(theirs);
            held.complete(null);
            release.get();
            theirs.unlock();
        });
        held.get(5, TimeUnit.SECONDS);
        return holding;
    }

    /** {@code client} takes the lock with {@code take} on a thread of its own: the server's hold count once granted. */
    private CompletableFuture<Long> holdsOnceGranted(Consumer<RLock> take) {
        return Async.call(() -> {
            RLock lock = client.getLock(name);
            take.accept(lock);
            long count = holds();
            lock.unlock();
            return count;
        });
    }

    @Test
    void aLostReplyDuringLockOrUnlockNeverCountsTwice() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock(30, TimeUnit.SECONDS);
        long token = lock.getToken();
        int connections = proxy.accepted();

        proxy.dropReplyTo("RLOCK.ACQUIRE");
        lock.lock(30, TimeUnit.SECONDS);
        assertTrue(proxy.awaitDrop(1000), "the reply was dropped");
        assertTrue(proxy.accepted() > connections, "the call was re-sent on a new connection");
        assertEquals(2, holds(), "the re-sent acquire (same ID) did not count twice");
        assertEquals(2, lock.getHoldCount());
        assertEquals(token, lock.getToken());

        proxy.dropReplyTo("RLOCK.RELEASE");
        lock.unlock();
        assertTrue(proxy.awaitDrop(1000));
        assertEquals(1, holds(), "the re-sent release (same ID) did not count twice");
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
        assertNull(info());
        assertTrue(lost.isEmpty(), "nothing was lost: " + lost);
    }

    @Test
    void withAGracePeriodTheWatchdogHoldingIsReboundAfterTheDrop() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "5000");
        RLock lock = client.getLock(name);
        lock.lock();
        long before = clientConnectionId();
        assertEquals(before, (Long) info().get("watchdog"));

        proxy.dropReplyTo("RLOCK.ACQUIRE");
        lock.lock();
        assertTrue(proxy.awaitDrop(1000));
        assertEquals(2, holds());
        long after = clientConnectionId();
        assertNotEquals(before, after);
        assertEquals(after, (Long) info().get("watchdog"), "re-bound to the new connection");

        proxy.dropReplyTo("RLOCK.RELEASE");
        lock.unlock();
        assertTrue(proxy.awaitDrop(1000));
        assertEquals(1, holds());
        eventually(2000, "re-bound again", () -> Long.valueOf(clientConnectionId()).equals(info().get("watchdog")));
        assertTrue(lost.isEmpty(), "nothing was lost: " + lost);
        lock.unlock();
        assertNull(info());
    }

    @Test
    void withoutAGracePeriodTheDropEndsTheHoldingAndTheRetryTakesItAfresh() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        long first = lock.getToken();
        proxy.dropReplyTo("RLOCK.ACQUIRE");
        lock.lock();
        assertTrue(proxy.awaitDrop(1000));
        assertEquals(1, holds(), "the drop released the first holding; the retry holds once, not twice");
        LostLock gone = lost.poll(2, TimeUnit.SECONDS);
        assertEquals(new LostLock(name, "lock", client.getId() + ":" + Thread.currentThread().getId(), first), gone);
        assertTrue(lock.getToken() > first);
        lock.unlock();
        assertNull(info());
    }

    @Test
    void aKilledConnectionLosesTheLockAndSaysSo() throws Exception {
        RLock lock = client.getLock(name);
        lock.lock();
        long token = lock.getToken();
        Admin.call(admin, "CLIENT", "KILL", "ID", clientConnectionId());
        LostLock gone = lost.poll(3, TimeUnit.SECONDS);
        assertEquals(new LostLock(name, "lock", client.getId() + ":" + Thread.currentThread().getId(), token), gone);
        assertFalse(lock.isHeldByCurrentThread());
        assertThrows(IllegalMonitorStateException.class, lock::getToken);
        assertTrue(Async.call(() -> {
            RLock theirs = other.getLock(name);
            boolean got = theirs.tryLock();
            theirs.unlock();
            return got;
        }).get());
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
    }

    @Test
    void aKilledConnectionWithinTheGraceKeepsTheLock() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "5000");
        RLock lock = client.getLock(name);
        lock.lock();
        long before = clientConnectionId();
        Admin.call(admin, "CLIENT", "KILL", "ID", before);
        eventually(3000, "re-bound at once by the maintenance thread", () -> {
            Object bound = info().get("watchdog");
            return bound != null && !bound.equals(before);
        });
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(Async.call(() -> other.getLock(name).tryLock()).get());
        assertTrue(lost.isEmpty());
        lock.unlock();
        assertNull(info());
    }

    @Test
    void aWaitThatLosesItsConnectionIsSentAgain() throws Exception {
        CompletableFuture<Void> release = new CompletableFuture<>();
        CompletableFuture<Void> holding = heldByOther(RLock::lock, release);
        CompletableFuture<Long> waiting = holdsOnceGranted(RLock::lock);
        eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
        proxy.cutAll();
        Thread.sleep(200);
        eventually(5000, "queued again from a new connection", () -> Admin.waiters(admin, name) == 1);
        assertFalse(waiting.isDone());
        release.complete(null);
        holding.get(5, TimeUnit.SECONDS);
        assertEquals(1L, waiting.get(5, TimeUnit.SECONDS), "granted once");
        assertNull(info());
    }

    @Test
    void aLostWaitingReplyIsSentAgainWithItsId() throws Exception {
        CompletableFuture<Void> release = new CompletableFuture<>();
        CompletableFuture<Void> holding = heldByOther(lock -> lock.lock(30, TimeUnit.SECONDS), release);
        proxy.dropReplyTo("RLOCK.ACQUIRE");
        CompletableFuture<Long> waiting = holdsOnceGranted(lock -> lock.lock(30, TimeUnit.SECONDS));
        assertTrue(proxy.awaitDrop(2000));
        eventually(5000, "queued again", () -> Admin.waiters(admin, name) == 1);
        release.complete(null);
        holding.get(5, TimeUnit.SECONDS);
        assertEquals(1L, waiting.get(5, TimeUnit.SECONDS));
    }

    @Test
    void aLostCountDownReplyCountsOnce() throws Exception {
        RCountDownLatch latch = client.getCountDownLatch(name);
        assertTrue(latch.trySetCount(3));
        proxy.dropReplyTo("RLATCH.COUNTDOWN");
        latch.countDown();
        assertTrue(proxy.awaitDrop(1000));
        assertEquals(2, latch.getCount());
    }

    @Test
    void aLostSemaphoreReplyTakesOnce() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "5000");
        ROwnedSemaphore semaphore = client.getOwnedSemaphore(name);
        assertTrue(semaphore.trySetPermits(3));
        proxy.dropReplyTo("RSEM.ACQUIRE");
        assertTrue(semaphore.tryAcquire(2));
        assertTrue(proxy.awaitDrop(1000));
        assertEquals(1, semaphore.availablePermits());
        proxy.dropReplyTo("RSEM.RELEASE");
        semaphore.release(1);
        assertTrue(proxy.awaitDrop(1000));
        eventually(2000, "one permit back, not two", () -> semaphore.availablePermits() == 2);
        semaphore.release(1);
        assertEquals(3, semaphore.availablePermits());
        assertTrue(lost.isEmpty(), "nothing was lost: " + lost);
    }

    @Test
    void withoutAGracePeriodADroppedReleaseGivesBackEverythingAndSaysSo() throws Exception {
        ROwnedSemaphore semaphore = client.getOwnedSemaphore(name);
        assertTrue(semaphore.trySetPermits(3));
        assertTrue(semaphore.tryAcquire(2));
        proxy.dropReplyTo("RSEM.RELEASE");
        // The server ends the dropped connection's holding as it handles the close, which may
        // come before or after the re-sent release: either the release finds nothing held, or it
        // gives back its permit and the close the other one. Never more than what was taken.
        try {
            semaphore.release(1);
        } catch (IllegalMonitorStateException closeHandledFirst) {
            // the drop ended the watchdog holding: the re-sent release found nothing held
        }
        eventually(2000, "every permit back", () -> semaphore.availablePermits() == 3);
        Thread.sleep(100);
        assertEquals(3, semaphore.availablePermits(), "the permits came back once, not more");
        LostLock gone = lost.poll(2, TimeUnit.SECONDS);
        assertEquals("permits", gone.type());
        assertEquals(name, gone.name());
    }
}
