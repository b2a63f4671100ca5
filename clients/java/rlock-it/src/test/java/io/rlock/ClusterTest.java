package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.lettuce.core.cluster.SlotHash;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.RedisServer;

/** A 3-master Redis Cluster: calls follow MOVED to the slot's node, and ASK during a migration. */
class ClusterTest {
    static final int[][] RANGES = {{0, 5460}, {5461, 10922}, {10923, 16383}};
    static final List<RedisServer> nodes = new ArrayList<>();
    static final List<AdminConnection> admins = new ArrayList<>();
    static final List<String> ids = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        for (int i = 0; i < 3; i++) {
            RedisServer node = RedisServer.start("--cluster-enabled", "yes", "--cluster-node-timeout", "5000");
            nodes.add(node);
            AdminConnection admin = node.admin();
            admins.add(admin);
            ids.add(Admin.text(Admin.call(admin, "CLUSTER", "MYID")));
            Admin.call(admin, "CLUSTER", "ADDSLOTSRANGE", RANGES[i][0], RANGES[i][1]);
        }
        for (int i = 1; i < 3; i++) {
            Admin.call(admins.get(0), "CLUSTER", "MEET", "127.0.0.1", nodes.get(i).port);
        }
        eventually(20_000, "the cluster is up", () -> admins.stream().allMatch(admin -> {
            String info = Admin.text(Admin.call(admin, "CLUSTER", "INFO"));
            return info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3")
                    && ((List<?>) Admin.call(admin, "CLUSTER", "SLOTS")).size() == 3;
        }));
    }

    @AfterAll
    static void stop() {
        admins.forEach(AdminConnection::close);
        nodes.forEach(RedisServer::close);
    }

    static int owner(String key) {
        int slot = SlotHash.getSlot(key); // Lettuce's CRC16 of the hash tag
        for (int i = 0; i < 3; i++) {
            if (slot >= RANGES[i][0] && slot <= RANGES[i][1]) {
                return i;
            }
        }
        throw new AssertionError();
    }

    /** Whether the node holds the key (asking, so that an importing node answers too; a redirection: 0). */
    static long exists(int node, String key) {
        try {
            Object reply = admins.get(node).callAsking("EXISTS", key);
            return reply instanceof Long ? (Long) reply : 0;
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    /** A key of the given node's slots. */
    static String keyOn(int node, String prefix) {
        for (int i = 0; ; i++) {
            if (owner(prefix + i) == node) {
                return prefix + i;
            }
        }
    }

    @Test
    void everyKeyIsLockedOnItsSlotsNode() throws Exception {
        try (RLockClient client = TestClients.create(nodes.get(0).uri())) {
            List<RLock> locks = new ArrayList<>();
            int[] perNode = new int[3];
            for (int i = 0; i < 30; i++) {
                String key = "cluster:key:" + i;
                RLock lock = client.getLock(key);
                lock.lock();
                locks.add(lock);
                int home = owner(key);
                perNode[home]++;
                for (int node = 0; node < 3; node++) {
                    assertEquals(node == home ? 1 : 0, exists(node, key), key + " on node " + node);
                }
                assertTrue(lock.isHeldByCurrentThread());
            }
            assertTrue(perNode[0] > 0 && perNode[1] > 0 && perNode[2] > 0, "keys on every node");
            for (int node = 0; node < 3; node++) {
                assertEquals(1, Admin.clientsNamed(admins.get(node), "rlock-java:" + client.getId()).size(),
                        "one connection on node " + node);
            }
            for (RLock lock : locks) {
                lock.unlock();
                assertTrue(!lock.isLocked());
            }
        }
    }

    /** getKeys() covers every master, as Redisson's: count() sums their DBSIZE, flushall() empties each. */
    @Test
    void keysAreCountedAndFlushedOnEveryMaster() throws Exception {
        try (RLockClient client = TestClients.create(nodes.get(1).uri())) {
            RKeys keys = client.getKeys();
            keys.flushall();
            for (int node = 0; node < 3; node++) {
                client.getLock(keyOn(node, "cluster:keys:")).lock(1, TimeUnit.MINUTES);
            }
            assertEquals(3, keys.count());
            keys.flushall();
            for (int node = 0; node < 3; node++) {
                assertEquals(0L, Admin.call(admins.get(node), "DBSIZE"), "node " + node + " flushed");
            }
            assertEquals(0, keys.count());
        }
    }

    @Test
    void waitsAreToldByTheirNode() throws Exception {
        String key = keyOn(2, "cluster:wait:");
        try (RLockClient holder = TestClients.create(nodes.get(0).uri());
                RLockClient waiter = TestClients.create(nodes.get(1).uri())) {
            RLock lock = holder.getLock(key);
            lock.lock();
            CompletableFuture<Long> waiting = Async.grantedToken(waiter.getLock(key));
            eventually(5000, "queued on node 2", () -> Admin.waiters(admins.get(2), key) == 1);
            long token = lock.getToken();
            lock.unlock();
            assertTrue(waiting.get(5, TimeUnit.SECONDS) > token);
            RCountDownLatch latch = holder.getCountDownLatch(keyOn(1, "cluster:latch:"));
            latch.trySetCount(1);
            CompletableFuture<Boolean> awaiting = Async.call(() -> waiter.getCountDownLatch(latch.getName()).await(5, TimeUnit.SECONDS));
            Thread.sleep(100);
            latch.countDown();
            assertTrue(awaiting.get(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void aMigratingSlotIsAskedOfItsImportingNode() throws Exception {
        String key = keyOn(0, "cluster:ask:");
        int slot = SlotHash.getSlot(key); // Lettuce's CRC16 of the hash tag
        AdminConnection source = admins.get(0);
        AdminConnection target = admins.get(1);
        Admin.call(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids.get(0));
        Admin.call(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids.get(1));
        try (RLockClient client = TestClients.create(nodes.get(0).uri());
                RLockClient other = TestClients.create(nodes.get(2).uri())) {
            RLock lock = client.getLock(key);
            lock.lock();
            assertEquals(0, exists(0, key), "not created on the migrating node");
            assertEquals(1, exists(1, key), "created on the importing node, after ASKING");
            assertEquals(1, lock.getHoldCount());
            CompletableFuture<Void> waiting = Async.run(() -> {
                RLock mine = other.getLock(key);
                mine.lock();
                mine.unlock();
            });
            eventually(5000, "queued on the importing node", () -> {
                Object reply;
                try {
                    reply = target.callAsking("RLOCK.INFO", key);
                } catch (java.io.IOException e) {
                    throw new AssertionError(e);
                }
                return reply != null && (Long) Admin.map(reply).get("waiters") == 1;
            });
            lock.unlock();
            waiting.get(5, TimeUnit.SECONDS);
            assertEquals(0, exists(1, key), () -> { try { return "left: " + Admin.map(target.callAsking("RLOCK.INFO", key)) + " type " + target.callAsking("TYPE", key) + " keys " + target.callAsking("KEYS", "*ask*"); } catch (Exception e) { return e.toString(); } });
        } finally {
            Admin.call(target, "CLUSTER", "SETSLOT", slot, "NODE", ids.get(0));
            Admin.call(source, "CLUSTER", "SETSLOT", slot, "NODE", ids.get(0));
        }
    }
}
