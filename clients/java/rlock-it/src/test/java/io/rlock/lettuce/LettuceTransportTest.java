package io.rlock.lettuce;

import io.rlock.testing.TestClients;
import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.rlock.LostLock;
import io.rlock.RCountDownLatch;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.RLockException;
import io.rlock.RPermitExpirableSemaphore;
import io.rlock.RReadWriteLock;
import io.rlock.RSemaphore;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The API over the user's Lettuce RedisClient (standalone): locks, waits told by message,
 * semaphores, latches; the session is one dedicated connection of that client; a dropped
 * session re-binds its watchdog holdings within the server's grace, or reports them lost.
 */
class LettuceTransportTest {
    static RedisServer server;
    static AdminConnection admin;
    static RedisClient lettuce;

    RLockClient locks;
    RLockClient plain;
    String name;
    final BlockingQueue<LostLock> lost = new LinkedBlockingQueue<>();

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start();
        admin = server.admin();
        lettuce = RedisClient.create();
    }

    @AfterAll
    static void stop() {
        lettuce.shutdown();
        admin.close();
        server.close();
    }

    @BeforeEach
    void connect(TestInfo test) {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "0");
        locks = LettuceRLocks.of(lettuce, RedisURI.create("127.0.0.1", server.port));
        locks.addLockLostListener(lost::add);
        plain = TestClients.create(server.uri());
        name = "lettuce:" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void disconnect() {
        locks.close();
        plain.close();
    }

    private List<Long> sessionIds() {
        List<Long> ids = new ArrayList<>();
        for (String line : Admin.clientsNamed(admin, "rlock-java:" + locks.getId())) {
            ids.add(Long.parseLong(line.split(" ")[0].substring("id=".length())));
        }
        return ids;
    }

    @Test
    void aLockIsTakenWaitedForAndGrantedByMessage() throws Exception {
        RLock lock = locks.getLock(name);
        lock.lock();
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        assertThat(lock.getToken()).isPositive();
        assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(5, TimeUnit.SECONDS)).isFalse();
        lock.unlock();

        RLock theirs = plain.getLock(name);
        theirs.lock();
        CompletableFuture<Boolean> waiter = Async.call(() -> {
            boolean got = lock.tryLock(20, TimeUnit.SECONDS);
            if (got) {
                lock.unlock();
            }
            return got;
        });
        eventually(10_000, "the Lettuce-backed waiter queued", () -> Admin.waiters(admin, name) == 1);
        long released = System.nanoTime();
        theirs.unlock();
        assertThat(waiter.get(10, TimeUnit.SECONDS)).isTrue();
        long tookMs = (System.nanoTime() - released) / 1_000_000;
        assertThat(tookMs).as("granted by message, not by polling or a lease").isLessThan(5_000);
    }

    @Test
    void everyTypeWorksOverTheLettuceSession() throws Exception {
        RReadWriteLock rw = locks.getReadWriteLock(name + ":rw");
        rw.readLock().lock();
        assertThat(Async.call(() -> plain.getReadWriteLock(name + ":rw").writeLock().tryLock()).get(5, TimeUnit.SECONDS)).isFalse();
        rw.readLock().unlock();
        RSemaphore counting = locks.getSemaphore(name + ":cs");
        assertThat(counting.trySetPermits(2)).isTrue();
        assertThat(counting.tryAcquire(2)).isTrue();
        assertThat(counting.availablePermits()).isZero();
        counting.release(2);
        RPermitExpirableSemaphore ids = locks.getPermitExpirableSemaphore(name + ":ids");
        ids.trySetPermits(1);
        String id = ids.acquire();
        assertThat(ids.tryAcquire()).isNull();
        ids.release(id);
        RCountDownLatch latch = locks.getCountDownLatch(name + ":latch");
        latch.trySetCount(1);
        CompletableFuture<Boolean> awaiting = Async.call(() -> latch.await(20, TimeUnit.SECONDS));
        plain.getCountDownLatch(name + ":latch").countDown();
        assertThat(awaiting.get(10, TimeUnit.SECONDS)).isTrue();
        assertThatThrownBy(() -> locks.getLock(name).unlock()).isInstanceOf(IllegalMonitorStateException.class);
        Admin.call(admin, "SET", name + ":string", "x");
        assertThatThrownBy(() -> locks.getLock(name + ":string").tryLock()).isInstanceOf(RLockException.class);
    }

    @Test
    void theSessionIsOneDedicatedConnectionAndTheUsersClientStaysOpen() throws Exception {
        List<CompletableFuture<Boolean>> waiters = new ArrayList<>();
        RLock theirs = plain.getLock(name);
        theirs.lock();
        for (int i = 0; i < 20; i++) {
            waiters.add(Async.call(() -> {
                RLock lock = locks.getLock(name);
                boolean got = lock.tryLock(30, TimeUnit.SECONDS);
                if (got) {
                    lock.unlock();
                }
                return got;
            }));
        }
        eventually(10_000, "20 waiters queued", () -> Admin.waiters(admin, name) == 20);
        assertThat(sessionIds()).as("one connection carries every call and wait").hasSize(1);
        theirs.unlock();
        for (CompletableFuture<Boolean> waiter : waiters) {
            assertThat(waiter.get(20, TimeUnit.SECONDS)).isTrue();
        }
        locks.close();
        eventually(5_000, "the session closed with the RLockClient", () -> sessionIds().isEmpty());
        try (StatefulRedisConnection<String, String> own = lettuce.connect(RedisURI.create("127.0.0.1", server.port))) {
            assertThat(own.sync().ping()).as("the user's client is not closed with ours").isEqualTo("PONG");
        }
    }

    @Test
    void theSessionIsOpenedByTheUsersClient() throws Exception {
        List<Object> events = new java.util.concurrent.CopyOnWriteArrayList<>();
        reactor.core.Disposable listening = lettuce.getResources().eventBus().get()
                .filter(event -> event instanceof io.lettuce.core.event.connection.ConnectionActivatedEvent)
                .subscribe(events::add);
        try (RLockClient more = LettuceRLocks.of(lettuce, RedisURI.create("127.0.0.1", server.port))) {
            RLock lock = more.getLock(name);
            lock.lock();
            lock.unlock();
            eventually(5_000, "the user's client reports the session it connected", () -> events.size() == 1);
        } finally {
            listening.dispose();
        }
    }

    @Test
    void aDroppedSessionWithinTheGraceKeepsItsWatchdogHolding() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "5000");
        RLock lock = locks.getLock(name);
        lock.lock();
        List<Long> before = sessionIds();
        assertThat(before).hasSize(1);
        Admin.call(admin, "CLIENT", "KILL", "ID", before.get(0));
        eventually(10_000, "re-bound on a new session", () -> {
            Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", name);
            Object bound = info == null ? null : info.get("watchdog");
            return bound != null && !bound.equals(before.get(0));
        });
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(5, TimeUnit.SECONDS)).isFalse();
        assertThat(lost).isEmpty();
        lock.unlock();
        assertThat(Admin.info(admin, "RLOCK.INFO", name)).isNull();
    }

    @Test
    void aDroppedSessionWithoutAGraceLosesItsHoldingAndSaysSo() throws Exception {
        RLock lock = locks.getLock(name);
        lock.lock();
        Admin.call(admin, "CLIENT", "KILL", "ID", sessionIds().get(0));
        LostLock told = lost.poll(10, TimeUnit.SECONDS);
        assertThat(told).as("the holder is told").isNotNull();
        assertThat(told.name()).isEqualTo(name);
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
        assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(5, TimeUnit.SECONDS)).isTrue();
    }
}
