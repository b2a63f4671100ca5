package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.RedisServer;

/**
 * {@link RLock#addListener}: Redis's {@code expired} and {@code del} keyevents of the lock's
 * key, heard on the client's own sessions (over Lettuce: RESP3's one connection; RESP2's
 * subscriber: rlock-jedis's JedisObjectListenerTest), also after a reconnect; a del heard by the time {@code unlock()} returns; the channels left when
 * the last listener goes.
 */
class ObjectListenerTest {
    static RedisServer server;
    static AdminConnection admin;
    final List<String> told = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start("--notify-keyspace-events", "Egx");
        admin = server.admin();
    }

    @AfterAll
    static void stop() {
        admin.close();
        server.close();
    }

    @BeforeEach
    void events() {
        Admin.call(admin, "CONFIG", "SET", "notify-keyspace-events", "Egx");
    }

    @AfterEach
    void clear() {
        told.clear();
    }

    private ExpiredObjectListener expired(String who) {
        return name -> told.add(who + " expired " + name);
    }

    private DeletedObjectListener deleted(String who) {
        return name -> told.add(who + " deleted " + name);
    }

    private long subscribers(String event) {
        List<?> reply = (List<?>) Admin.call(admin, "PUBSUB", "NUMSUB", "__keyevent@0__:" + event);
        return (Long) reply.get(1);
    }

    @Test
    void aReleaseIsHeardByTheTimeUnlockReturnsAndALeaseEndLater() throws Exception {
        try (RLockClient client = TestClients.create(server.uri())) {
            RLock lock = client.getLock("listened:release");
            lock.addListener(expired("a"));
            lock.addListener(deleted("a"));
            lock.lock();
            lock.unlock();
            assertEquals(List.of("a deleted " + lock.getName()), told, "told before unlock() returned");
            lock.lock(200, TimeUnit.MILLISECONDS);
            eventually(3000, "the lease end heard", () -> told.size() == 2);
            assertEquals("a expired " + lock.getName(), told.get(1));
        }
    }

    @Test
    void onlyTheKeysListenersAreToldAndARemovedOneNoMore() throws Exception {
        try (RLockClient client = TestClients.create(server.uri())) {
            RLock listened = client.getLock("listened");
            RLock quiet = client.getLock("quiet");
            int first = listened.addListener(deleted("first"));
            listened.addListener(deleted("second"));
            quiet.lock();
            quiet.unlock();
            listened.lock();
            listened.unlock();
            assertEquals(List.of("first deleted listened", "second deleted listened"), told, "nothing of the other key");
            listened.removeListener(first);
            listened.removeListener(12345); // unknown: ignored, as Redisson's
            listened.lock();
            listened.unlock();
            assertEquals(List.of("first deleted listened", "second deleted listened", "second deleted listened"), told);
        }
    }

    @Test
    void theChannelsAreLeftWithTheLastListener() throws Exception {
        try (RLockClient client = TestClients.create(server.uri())) {
            RLock lock = client.getLock("channels");
            int one = lock.addListener(deleted("one"));
            int two = lock.addListener(deleted("two"));
            int three = lock.addListener(expired("three"));
            assertEquals(1, subscribers("del"));
            assertEquals(1, subscribers("expired"));
            lock.removeListener(three);
            assertEquals(0, subscribers("expired"));
            lock.removeListener(one);
            assertEquals(1, subscribers("del"), "still needed by the other listener");
            lock.removeListener(two);
            assertEquals(0, subscribers("del"));
        }
    }

    @Test
    void aNewSessionListensAgain() throws Exception {
        try (RLockClient client = TestClients.create(server.uri())) {
            RLock lock = client.getLock("reconnected");
            lock.addListener(deleted("a"));
            List<String> connections = Admin.clientsNamed(admin, "rlock-java:" + client.getId());
            assertEquals(1, connections.size(), "one connection: " + connections);
            Admin.call(admin, "CLIENT", "KILL", "ID", connections.get(0).split(" ")[0].substring("id=".length()));
            lock.lock(); // on a new session
            lock.unlock();
            assertEquals(List.of("a deleted reconnected"), told);
        }
    }

    @Test
    void aListenerTheServerWouldNeverTellIsRefused() throws Exception {
        try (RLockClient client = TestClients.create(server.uri())) {
            RLock lock = client.getLock("refused");
            Admin.call(admin, "CONFIG", "SET", "notify-keyspace-events", "Ex");
            lock.addListener(expired("a"));
            IllegalStateException off = assertThrows(IllegalStateException.class, () -> lock.addListener(deleted("b")));
            assertTrue(off.getMessage().contains("it needs E and g"), off.getMessage());
            assertThrows(IllegalArgumentException.class, () -> lock.addListener(new ObjectListener() { }));
            assertEquals(0, subscribers("del"), "a refused listener subscribes nothing");
            assertThrows(UnsupportedOperationException.class, () -> client.getMultiLock(lock).addListener(deleted("c")));
        }
    }
}
