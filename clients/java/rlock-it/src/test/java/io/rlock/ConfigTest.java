package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.RedisServer;

/** Redisson's {@link Config} and {@link NameMapper}, against a real server. */
class ConfigTest extends OneServer {
    /** Maps {@code name} to {@code app:name}; unmaps only what it mapped, so a stray key shows. */
    static final NameMapper PREFIX = new NameMapper() {
        @Override
        public String map(String name) {
            return "app:" + name;
        }

        @Override
        public String unmap(String key) {
            assertTrue(key.startsWith("app:"), "unmap of a key this mapper did not make: " + key);
            return key.substring("app:".length());
        }
    };

    @BeforeEach
    void flush() {
        Admin.call(admin, "FLUSHALL");
    }

    private static RLockClient mapped() {
        return TestClients.create(server.uri(), new RLockOptions().nameMapper(PREFIX));
    }

    private static Set<String> keys() {
        Set<String> keys = new TreeSet<>();
        for (Object key : (List<?>) Admin.call(admin, "KEYS", "*")) {
            keys.add(Admin.text(key));
        }
        return keys;
    }

    @Test
    void everyObjectsKeyIsItsMappedName() throws Exception {
        try (RLockClient client = mapped()) {
            RLock lock = client.getLock("lock");
            lock.lock();
            RLock fair = client.getFairLock("fair");
            fair.lock();
            RReadWriteLock rw = client.getReadWriteLock("rw");
            rw.writeLock().lock();
            RSemaphore counting = client.getSemaphore("counting");
            counting.trySetPermits(2);
            ROwnedSemaphore owned = client.getOwnedSemaphore("owned");
            owned.trySetPermits(1);
            RPermitExpirableSemaphore permits = client.getPermitExpirableSemaphore("permits");
            permits.trySetPermits(1);
            String permit = permits.acquire();
            RCountDownLatch latch = client.getCountDownLatch("latch");
            latch.trySetCount(1);
            Election election = client.getElection("election", "me");
            election.campaign();
            MultiLock multi = client.getMultiLock(client.getLock("{m}a"), client.getLock("{m}b"));
            multi.lock();

            Set<String> keys = keys();
            for (String name : List.of("lock", "fair", "rw", "counting", "owned", "permits", "latch", "election",
                    "{m}a", "{m}b")) {
                assertTrue(keys.contains("app:" + name), "app:" + name + " among " + keys);
            }
            assertTrue(keys.stream().allMatch(key -> key.contains("app:")), "only mapped keys and their side keys: " + keys);

            assertEquals(List.of("lock", "fair", "rw", "rw", "rw", "counting", "owned", "permits", "latch", "election"),
                    List.of(lock.getName(), fair.getName(), rw.getName(), rw.readLock().getName(),
                            rw.writeLock().getName(), counting.getName(), owned.getName(), permits.getName(),
                            latch.getName(), election.getName()));
            assertEquals(List.of("{m}a", "{m}b"), multi.getNames());

            multi.unlock();
            permits.release(permit);
            lock.unlock();
            assertTrue(fair.isHeldByCurrentThread());
        }
    }

    @Test
    void aLostHoldingIsReportedByTheGivenName() throws Exception {
        try (RLockClient holder = mapped(); RLockClient other = mapped()) {
            LinkedBlockingQueue<LostLock> lost = new LinkedBlockingQueue<>();
            holder.addLockLostListener(lost::add);
            RLock lock = holder.getLock("orders");
            lock.lock();
            long token = lock.getToken();
            assertTrue(other.getLock("orders").forceUnlock());
            assertEquals(new LostLock("orders", "lock", holder.getId() + ":" + Thread.currentThread().getId(), token),
                    lost.poll(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void anObjectListenerIsToldTheGivenName() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "notify-keyspace-events", "Egx");
        try (RLockClient client = mapped()) {
            List<String> deleted = new java.util.concurrent.CopyOnWriteArrayList<>();
            RLock lock = client.getLock("orders");
            lock.addListener((DeletedObjectListener) deleted::add);
            lock.lock();
            lock.unlock();
            assertEquals(List.of("orders"), deleted);
        } finally {
            Admin.call(admin, "CONFIG", "SET", "notify-keyspace-events", "");
        }
    }

    @Test
    void getConfigDescribesTheClientAndConnectsAnotherAlike() throws Exception {
        try (RLockClient client = RLockClient.create(server.uri(),
                new RLockOptions().watchdogLease(java.time.Duration.ofSeconds(7)))) {
            Config config = client.getConfig();
            assertEquals("redis://127.0.0.1:" + server.port, config.useSingleServer().getAddress());
            assertEquals(7000, config.getLockWatchdogTimeout());
            assertThrows(IllegalStateException.class, config::useClusterServers);

            config.setLockWatchdogTimeout(3000).setSlavesSyncTimeout(2000);
            config.useSingleServer().setNameMapper(PREFIX);
            assertEquals(7000, client.getConfig().getLockWatchdogTimeout(), "a copy: the client is unchanged");
            try (RLockClient alike = RLockClient.create(config)) {
                assertEquals(3000, alike.getConfig().getLockWatchdogTimeout());
                assertEquals(2000, alike.getConfig().getSlavesSyncTimeout());
                RLock lock = alike.getLock("k");
                lock.lock();
                long ttl = (Long) Admin.call(admin, "PTTL", "app:k");
                assertTrue(ttl > 0 && ttl <= 3000, "the watchdog's lease of 3000 ms, not 30 s: " + ttl);
                lock.unlock();
            }
        }
    }

    @Test
    void clusterNodesAreTriedInTurn() throws Exception {
        int dead = RedisServer.freePort();
        Config config = new Config();
        config.useClusterServers().addNodeAddress("redis://127.0.0.1:" + dead, server.uri()).setConnectTimeout(300);
        long start = System.nanoTime();
        try (RLockClient client = RLockClient.create(config)) {
            assertTrue(client.getLock("k").tryLock());
        }
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(tookMs < 4000, "the dead node given up after the 300 ms connect timeout (default 5 s), in " + tookMs + " ms");
        Config none = new Config();
        none.useClusterServers().addNodeAddress("redis://127.0.0.1:" + dead).setConnectTimeout(300);
        RLockException refused = assertThrows(RLockException.class, () -> RLockClient.create(none));
        assertTrue(refused.getMessage().contains(String.valueOf(dead)), refused.getMessage());
    }

    @Test
    void aConfigWithoutAServerOrWithABadAddressIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> RLockClient.create(new Config()));
        Config noAddress = new Config();
        noAddress.useSingleServer();
        assertThrows(IllegalArgumentException.class, () -> RLockClient.create(noAddress));
        assertThrows(IllegalArgumentException.class, () -> new Config().useSingleServer().setAddress("http://h:1"));
        assertThrows(IllegalArgumentException.class, () -> new Config().useClusterServers().setNameMapper(null));
        assertThrows(IllegalArgumentException.class, () -> new Config().useSingleServer().setTimeout(0));
        assertThrows(IllegalArgumentException.class, () -> new Config().setLockWatchdogTimeout(0));
    }
}
