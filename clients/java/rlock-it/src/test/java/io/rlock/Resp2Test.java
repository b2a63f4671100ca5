package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.RedisServer;

/**
 * A server that refuses HELLO 3 (renamed away): the client speaks RESP2 with a command
 * connection and a subscriber connection named in NOTIFY; also RESP2 chosen in the options.
 * The engine's own RESP client's handshake ({@code RLockClient.create}): it goes with that client
 * (the engine's RESP2 path stays covered over Jedis, rlock-jedis's tests).
 */
class Resp2Test {
    static RedisServer server;
    static AdminConnection admin;

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start("--rename-command", "HELLO", "");
        admin = server.admin();
    }

    @AfterAll
    static void stop() {
        admin.close();
        server.close();
    }

    @Test
    void locksAndWaitsWithASubscriberConnection() throws Exception {
        String name = "resp2:lock";
        try (RLockClient client = RLockClient.create(server.uri()); RLockClient other = RLockClient.create(server.uri())) {
            List<String> connections = Admin.clientsNamed(admin, "rlock-java:" + client.getId());
            assertEquals(2, connections.size(), "a command and a subscriber connection: " + connections);
            assertTrue(connections.stream().allMatch(line -> line.contains("resp=2")));
            RLock lock = client.getLock(name);
            lock.lock();
            lock.lock();
            assertEquals(2, lock.getHoldCount());
            CompletableFuture<Long> waiter = Async.grantedToken(other.getLock(name));
            eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
            assertEquals("0", Admin.infoField(admin, "clients", "blocked_clients"));
            long token = lock.getToken();
            lock.unlock();
            lock.unlock();
            assertTrue(waiter.get(5, TimeUnit.SECONDS) > token);

            // An interrupted wait leaves the queue; nobody is granted the lock afterwards.
            lock.lock();
            Async.Interruptible interrupted = Async.interruptible(() -> other.getLock(name).lockInterruptibly());
            eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
            interrupted.interrupt();
            interrupted.done().get(5, TimeUnit.SECONDS);
            assertEquals(0, Admin.waiters(admin, name));
            lock.unlock();
            assertNull(Admin.info(admin, "RLOCK.INFO", name));
        }
    }

    @Test
    void aWatchdogGrantByMessageEndsWithTheClientAndIsLostWithItsSubscriber() throws Exception {
        String name = "resp2:watchdog";
        BlockingQueue<LostLock> lost = new LinkedBlockingQueue<>();
        try (RLockClient client = RLockClient.create(server.uri()); RLockClient other = RLockClient.create(server.uri())) {
            client.addLockLostListener(lost::add);
            RLock theirs = other.getLock(name);
            theirs.lock();
            CompletableFuture<Long> waiter = Async.call(() -> {
                RLock mine = client.getLock(name);
                mine.lock();
                return mine.getToken();
            });
            eventually(5000, "queued", () -> Admin.waiters(admin, name) == 1);
            theirs.unlock();
            long token = waiter.get(5, TimeUnit.SECONDS);
            // Kill the connection the grant is bound to: the holding ends, the client says so.
            long bound = (Long) Admin.info(admin, "RLOCK.INFO", name).get("watchdog");
            Admin.call(admin, "CLIENT", "KILL", "ID", bound);
            LostLock gone = lost.poll(3, TimeUnit.SECONDS);
            assertEquals(token, gone.token());
            assertFalse(client.getLock(name).isLocked());
        }
    }

    @Test
    void resp2CanBeChosen() throws Exception {
        try (RedisServer modern = RedisServer.start(); AdminConnection check = modern.admin();
                RLockClient client = RLockClient.create(modern.uri(), new RLockOptions().protocol(2))) {
            List<String> connections = Admin.clientsNamed(check, "rlock-java:" + client.getId());
            assertEquals(2, connections.size());
            assertTrue(connections.stream().allMatch(line -> line.contains("resp=2")));
            RCountDownLatch latch = client.getCountDownLatch("resp2:latch");
            latch.trySetCount(1);
            CompletableFuture<Boolean> waiting = Async.call(() -> latch.await(5, TimeUnit.SECONDS));
            Thread.sleep(100);
            latch.countDown();
            assertTrue(waiting.get(5, TimeUnit.SECONDS));
            RReadWriteLock rw = client.getReadWriteLock("resp2:rw");
            rw.readLock().lock();
            assertEquals(1, rw.readLock().getHoldCount(), "RWLOCK.INFO read as a flat RESP2 array");
            rw.readLock().unlock();
        }
    }
}
