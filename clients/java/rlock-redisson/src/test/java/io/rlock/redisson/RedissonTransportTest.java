package io.rlock.redisson;

import io.rlock.testing.TestClients;
import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rlock.LostLock;
import io.rlock.MultiLock;
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
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.NameMapper;
import org.redisson.config.Protocol;

/**
 * The API over the user's RedissonClient (a single server): locks, waits told by message,
 * every type; the sessions are dedicated connections of Redisson's node client, outside its
 * pools; Redisson's Config (name mapper, watchdog timeout) serves rlock; a session dropped
 * without a grace reports its watchdog holdings lost (kept within the grace: RedissonContractTest);
 * Redisson's idle-connection watcher closing pooled connections leaves a held lock bound.
 */
class RedissonTransportTest {
    static RedisServer server;
    static AdminConnection admin;
    static RedissonClient redisson;

    RLockClient locks;
    RLockClient plain;
    String name;
    final BlockingQueue<LostLock> lost = new LinkedBlockingQueue<>();

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start();
        admin = server.admin();
        redisson = Redisson.create(config());
    }

    static Config config() {
        Config config = new Config();
        config.useSingleServer().setAddress("redis://127.0.0.1:" + server.port)
                .setConnectionMinimumIdleSize(1).setConnectionPoolSize(4)
                .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(2);
        return config;
    }

    @AfterAll
    static void stop() {
        redisson.shutdown();
        admin.close();
        server.close();
    }

    @BeforeEach
    void connect(TestInfo test) {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "0");
        locks = RLocks.of(redisson);
        locks.addLockLostListener(lost::add);
        plain = TestClients.create(server.uri());
        name = "redisson:" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void disconnect() {
        locks.close();
        plain.close();
    }

    private List<Long> sessionIds(RLockClient client) {
        List<Long> ids = new ArrayList<>();
        for (String line : Admin.clientsNamed(admin, "rlock-java:" + client.getId())) {
            ids.add(Long.parseLong(line.split(" ")[0].substring("id=".length())));
        }
        return ids;
    }

    private static Object watchdogConnection(String key) {
        Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", key);
        return info == null ? null : info.get("watchdog");
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
        eventually(10_000, "the Redisson-backed waiter queued", () -> Admin.waiters(admin, name) == 1);
        long released = System.nanoTime();
        theirs.unlock();
        assertThat(waiter.get(10, TimeUnit.SECONDS)).isTrue();
        long tookMs = (System.nanoTime() - released) / 1_000_000;
        assertThat(tookMs).as("granted by message, not by polling or a lease").isLessThan(5_000);
    }

    @Test
    void everyTypeWorksOverTheRedissonSessions() throws Exception {
        RLock fair = locks.getFairLock(name + ":fair");
        assertThat(fair.lockAsync().get(5, TimeUnit.SECONDS)).isNull();
        assertThat(fair.isLocked()).isTrue();
        fair.unlockAsync().get(5, TimeUnit.SECONDS);

        RReadWriteLock rw = locks.getReadWriteLock(name + ":rw");
        rw.readLock().lock();
        assertThat(Async.call(() -> plain.getReadWriteLock(name + ":rw").writeLock().tryLock()).get(5, TimeUnit.SECONDS)).isFalse();
        rw.readLock().unlock();
        RSemaphore counting = locks.getSemaphore(name + ":cs");
        assertThat(counting.trySetPermits(2)).isTrue();
        assertThat(counting.tryAcquire(2)).isTrue();
        assertThat(counting.availablePermits()).isZero();
        counting.release(2);
        assertThat(locks.getOwnedSemaphore(name + ":os").trySetPermits(1)).isTrue();
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

        MultiLock both = locks.getMultiLock(locks.getLock(name + ":a"), locks.getLock(name + ":b"));
        assertThat(both.tryLock()).isTrue();
        assertThat(Async.call(() -> plain.getLock(name + ":b").tryLock()).get(5, TimeUnit.SECONDS)).isFalse();
        both.unlock();

        RLock guarded = locks.getLock(name + ":guarded");
        guarded.lock();
        assertThat(guarded.guard("SET", name + ":balance", "10")).isEqualTo("OK");
        guarded.unlock();
        assertThat(Admin.text(Admin.call(admin, "GET", name + ":balance"))).isEqualTo("10");

        var election = locks.getElection(name + ":election", "me");
        assertThat(election.campaign(5, TimeUnit.SECONDS)).isPositive();
        assertThat(election.leader()).isNotNull();
        election.resign();

        assertThatThrownBy(() -> locks.getLock(name).unlock()).isInstanceOf(IllegalMonitorStateException.class);
        Admin.call(admin, "SET", name + ":string", "x");
        assertThatThrownBy(() -> locks.getLock(name + ":string").tryLock())
                .isInstanceOf(RLockException.class).hasMessageContaining("WRONGTYPE");
    }

    @Test
    void theSessionsAreDedicatedConnectionsAndRedissonStaysOpen() throws Exception {
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
        assertThat(sessionIds(locks)).as("one session (calls, and its subscriber under RESP2) carries every call and wait").hasSize(2);
        theirs.unlock();
        for (CompletableFuture<Boolean> waiter : waiters) {
            assertThat(waiter.get(20, TimeUnit.SECONDS)).isTrue();
        }
        locks.close();
        eventually(5_000, "the sessions closed with the RLockClient", () -> sessionIds(locks).isEmpty());
        assertThat(redisson.isShutdown()).isFalse();
        redisson.getBucket(name + ":bucket").set("still mine");
        assertThat(redisson.getBucket(name + ":bucket").get()).isEqualTo("still mine");
    }

    @Test
    void redissonsConfigServesRLock() throws Exception {
        Config config = config();
        config.setLockWatchdogTimeout(7_000);
        config.useSingleServer().setNameMapper(new NameMapper() {
            @Override
            public String map(String name) {
                return "app:" + name;
            }

            @Override
            public String unmap(String name) {
                return name.substring("app:".length());
            }
        });
        RedissonClient mapped = Redisson.create(config);
        try (RLockClient ours = RLocks.of(mapped)) {
            RLock lock = ours.getLock(name);
            lock.lock();
            assertThat(lock.getName()).isEqualTo(name);
            assertThat(Admin.info(admin, "RLOCK.INFO", "app:" + name)).as("the key as Redisson maps it").isNotNull();
            assertThat(mapped.getLock(name).isLocked()).as("Redisson sees the same key held").isTrue();
            assertThat(lock.remainTimeToLive()).as("the watchdog lease is lockWatchdogTimeout").isBetween(1L, 7_000L);
            lock.unlock();
        } finally {
            mapped.shutdown();
        }
    }

    @Test
    void redissonClosingIdlePooledConnectionsLeavesAHeldLockBound() throws Exception {
        Config config = config();
        config.useSingleServer().setIdleConnectionTimeout(300).setClientName(name + ":pool")
                .setConnectionMinimumIdleSize(1).setConnectionPoolSize(6);
        RedissonClient pooled = Redisson.create(config);
        try (RLockClient ours = RLocks.of(pooled)) {
            ours.addLockLostListener(lost::add);
            RLock lock = ours.getLock(name);
            lock.lock();
            Object bound = watchdogConnection(name);
            assertThat(sessionIds(ours)).contains(((Number) bound).longValue());
            // Grow Redisson's pool with concurrent blocking commands (5 s each: seen while they block), then let it shrink.
            List<CompletableFuture<Object>> busy = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                int n = i;
                busy.add(Async.call(() -> pooled.getBlockingQueue(name + ":q" + n).poll(5, TimeUnit.SECONDS)));
            }
            eventually(20_000, "Redisson's pool grew", () -> Admin.clientsNamed(admin, name + ":pool").size() >= 5);
            for (CompletableFuture<Object> done : busy) {
                done.get(20, TimeUnit.SECONDS);
            }
            eventually(30_000, "Redisson's idle watcher closed pooled connections",
                    () -> Admin.clientsNamed(admin, name + ":pool").size() <= 3);
            assertThat(watchdogConnection(name)).as("the holding is still bound to its session").isEqualTo(bound);
            assertThat(lock.isHeldByCurrentThread()).isTrue();
            assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(5, TimeUnit.SECONDS)).isFalse();
            assertThat(lost).isEmpty();
            lock.unlock();
        } finally {
            pooled.shutdown();
        }
    }

    @Test
    void aDroppedSessionWithoutAGraceLosesItsHoldingAndSaysSo() throws Exception {
        RLock lock = locks.getLock(name);
        lock.lock();
        Admin.call(admin, "CLIENT", "KILL", "ID", watchdogConnection(name));
        LostLock told = lost.poll(10, TimeUnit.SECONDS);
        assertThat(told).as("the holder is told").isNotNull();
        assertThat(told.name()).isEqualTo(name);
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
        assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(5, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aRedissonSpeakingResp3Works() throws Exception {
        Config config = config();
        config.setProtocol(Protocol.RESP3);
        RedissonClient resp3 = Redisson.create(config);
        try (RLockClient ours = RLocks.of(resp3)) {
            RLock lock = ours.getLock(name);
            RLock theirs = plain.getLock(name);
            theirs.lock();
            CompletableFuture<Boolean> waiter = Async.call(() -> {
                boolean got = lock.tryLock(20, TimeUnit.SECONDS);
                if (got) {
                    lock.unlock();
                }
                return got;
            });
            eventually(10_000, "the RESP3 Redisson-backed waiter queued", () -> Admin.waiters(admin, name) == 1);
            theirs.unlock();
            assertThat(waiter.get(10, TimeUnit.SECONDS)).as("granted by message").isTrue();
            RReadWriteLock rw = ours.getReadWriteLock(name + ":rw");
            rw.writeLock().lock();
            assertThat(rw.writeLock().remainTimeToLive()).isPositive();
            rw.writeLock().unlock();
        } finally {
            resp3.shutdown();
        }
    }

    @Test
    void aClientNotMadeByRedissonIsRefused() {
        assertThatThrownBy(() -> RLocks.of(null)).isInstanceOf(IllegalArgumentException.class);
        RedissonClient closed = Redisson.create(config());
        closed.shutdown();
        assertThatThrownBy(() -> RLocks.of(closed)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shut down");
    }
}
