package io.rlock.jedis;

import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rlock.LostLock;
import io.rlock.RCountDownLatch;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.RLockException;
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
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPooled;

/**
 * The API over Jedis (standalone), with the user's JedisClientConfig (a password, database 3):
 * locks, waits told by message, the other types; the session is two dedicated Jedis connections
 * (RESP2: commands, and the subscriber the engine names in NOTIFY), never the user's pool's; a
 * dropped session re-binds its watchdog holdings within the server's grace, or reports them lost.
 */
class JedisTransportTest {
    static RedisServer server;
    static AdminConnection admin;
    static HostAndPort node;
    static JedisClientConfig config;

    RLockClient locks;
    RLockClient plain;
    String name;
    final BlockingQueue<LostLock> lost = new LinkedBlockingQueue<>();

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start("--requirepass", "s3cret");
        admin = server.admin("s3cret");
        node = new HostAndPort("127.0.0.1", server.port);
        config = DefaultJedisClientConfig.builder().password("s3cret").database(3).build();
    }

    @AfterAll
    static void stop() {
        admin.close();
        server.close();
    }

    @BeforeEach
    void connect(TestInfo test) {
        Admin.call(admin, "SELECT", "3");
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "0");
        locks = JedisRLocks.of(node, config);
        locks.addLockLostListener(lost::add);
        plain = JedisRLocks.of(node, config);
        name = "jedis:" + test.getTestMethod().orElseThrow().getName();
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

    private long watchdogBinding() {
        Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", name);
        assertThat(info).as("held").isNotNull();
        return ((Number) info.get("watchdog")).longValue();
    }

    @Test
    void aLockIsTakenInTheConfigsDatabaseWaitedForAndGrantedByMessage() throws Exception {
        RLock lock = locks.getLock(name);
        lock.lock();
        assertThat(lock.getToken()).isPositive();
        assertThat(Admin.info(admin, "RLOCK.INFO", name)).as("in database 3, the config's").isNotNull();
        assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(5, TimeUnit.SECONDS)).isFalse();
        CompletableFuture<Boolean> waiter = Async.call(() -> {
            RLock theirs = plain.getLock(name);
            boolean got = theirs.tryLock(20, TimeUnit.SECONDS);
            if (got) {
                theirs.unlock();
            }
            return got;
        });
        eventually(10_000, "the other Jedis-backed client queued", () -> Admin.waiters(admin, name) == 1);
        long released = System.nanoTime();
        lock.unlock();
        assertThat(waiter.get(10, TimeUnit.SECONDS)).isTrue();
        assertThat((System.nanoTime() - released) / 1_000_000).as("granted by message, not a lease").isLessThan(5_000);
    }

    @Test
    void everyTypeWorksOverTheJedisSession() throws Exception {
        RReadWriteLock rw = locks.getReadWriteLock(name + ":rw");
        rw.readLock().lock();
        assertThat(Async.call(() -> plain.getReadWriteLock(name + ":rw").writeLock().tryLock()).get(5, TimeUnit.SECONDS)).isFalse();
        rw.readLock().unlock();
        RSemaphore counting = locks.getSemaphore(name + ":cs");
        assertThat(counting.trySetPermits(2)).isTrue();
        assertThat(counting.tryAcquire(2)).isTrue();
        assertThat(counting.availablePermits()).isZero();
        counting.release(2);
        RCountDownLatch latch = locks.getCountDownLatch(name + ":latch");
        latch.trySetCount(1);
        CompletableFuture<Boolean> awaiting = Async.call(() -> latch.await(20, TimeUnit.SECONDS));
        plain.getCountDownLatch(name + ":latch").countDown();
        assertThat(awaiting.get(10, TimeUnit.SECONDS)).isTrue();
        assertThatThrownBy(() -> locks.getLock(name).unlock()).isInstanceOf(IllegalMonitorStateException.class);
        Admin.call(admin, "SET", name + ":string", "x");
        assertThatThrownBy(() -> locks.getLock(name + ":string").tryLock()).isInstanceOf(RLockException.class)
                .hasMessageContaining("WRONGTYPE");
    }

    @Test
    void theSessionIsDedicatedSoThePoolsRoutineCloseCannotEndAHeldLock() throws Exception {
        GenericObjectPoolConfig<Connection> poolConfig = new GenericObjectPoolConfig<>();
        JedisPooled pooled = new JedisPooled(poolConfig, "127.0.0.1", server.port, 2000, "s3cret", 3);
        pooled.set(name + ":plain", "the application's");
        RLock lock = locks.getLock(name);
        lock.lock();
        long bound = watchdogBinding();
        List<CompletableFuture<Boolean>> waiters = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            waiters.add(Async.call(() -> {
                RLock mine = locks.getLock(name + ":queued");
                boolean got = mine.tryLock(30, TimeUnit.SECONDS);
                if (got) {
                    mine.unlock();
                }
                return got;
            }));
        }
        RLock theirs = plain.getLock(name + ":queued");
        theirs.lock();
        assertThat(sessionIds()).as("RESP2: a command and a subscriber connection, whatever the load").hasSize(2);
        pooled.close();
        assertThat(sessionIds()).as("closing the user's pool closes none of ours").hasSize(2);
        assertThat(watchdogBinding()).isEqualTo(bound);
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        theirs.unlock();
        for (CompletableFuture<Boolean> waiter : waiters) {
            assertThat(waiter.get(20, TimeUnit.SECONDS)).isTrue();
        }
        lock.unlock();
        locks.close();
        eventually(5_000, "the session closed with the RLockClient", () -> sessionIds().isEmpty());
        assertThat(Admin.call(admin, "GET", name + ":plain")).isNotNull();
    }

    @Test
    void aDroppedSessionWithinTheGraceKeepsItsWatchdogHolding() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "5000");
        RLock lock = locks.getLock(name);
        lock.lock();
        long before = watchdogBinding();
        Admin.call(admin, "CLIENT", "KILL", "ID", before);
        eventually(10_000, "re-bound on a new session", () -> {
            Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", name);
            Object bound = info == null ? null : info.get("watchdog");
            return bound != null && !bound.equals(before);
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
        Admin.call(admin, "CLIENT", "KILL", "ID", watchdogBinding());
        LostLock told = lost.poll(10, TimeUnit.SECONDS);
        assertThat(told).as("the holder is told").isNotNull();
        assertThat(told.name()).isEqualTo(name);
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
        assertThat(Async.call(() -> plain.getLock(name).tryLock()).get(5, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void badInputIsRefusedClearly() {
        assertThatThrownBy(() -> JedisRLocks.of((HostAndPort) null, config)).isInstanceOf(IllegalArgumentException.class);
        JedisClientConfig wrongPassword = DefaultJedisClientConfig.builder().password("nope").build();
        assertThatThrownBy(() -> JedisRLocks.of(node, wrongPassword)).isInstanceOf(RLockException.class)
                .hasMessageContaining("cannot connect");
    }
}
