package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
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

/** Redisson's {@link NameMapper} ({@link RLockOptions#nameMapper}), against a real server. */
class NameMapperTest extends OneServer {
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
}
