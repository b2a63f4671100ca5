package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.RedisServer;

/** redis://[user:password@]host:port/db: AUTH, ACL users, SELECT. */
class AuthTest {
    static RedisServer server;
    static AdminConnection admin;

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start("--requirepass", "s3cret");
        admin = server.admin("s3cret");
        Admin.call(admin, "ACL", "SETUSER", "worker", "on", ">w0rk", "~locks:*", "resetchannels", "&__rlock__:*", "+@all");
        Admin.call(admin, "ACL", "SETUSER", "deaf", "on", ">pw", "~*", "resetchannels", "+@all");
    }

    @AfterAll
    static void stop() {
        admin.close();
        server.close();
    }

    @Test
    void passwordAndDatabase() throws Exception {
        try (RLockClient client = TestClients.create("redis://:s3cret@127.0.0.1:" + server.port + "/5")) {
            RLock lock = client.getLock("in-db-5");
            lock.lock();
            assertEquals(0L, Admin.call(admin, "EXISTS", "in-db-5"), "not in db 0");
            Admin.call(admin, "SELECT", "5");
            try {
                assertEquals(1L, Admin.call(admin, "EXISTS", "in-db-5"));
            } finally {
                Admin.call(admin, "SELECT", "0");
            }
            lock.unlock();
        }
        RLockException refused = assertThrows(RLockException.class, () -> TestClients.create("redis://:wrong@127.0.0.1:" + server.port));
        // Lettuce fails its handshake with the server's WRONGPASS or, when it reads its channel's close
        // first, with "Connection closed prematurely" (seen once in a full run at load average 8):
        // refused either way, and no session made.
        String why = refused.getMessage();
        assertTrue(why.contains("WRONGPASS") || why.contains("Connection closed prematurely"), why);
        assertThrows(RLockException.class, () -> TestClients.create("redis://127.0.0.1:" + server.port), "no password");
    }

    @Test
    void anAclUserWithItsKeysAndTheNotifyChannel() throws Exception {
        try (RLockClient client = TestClients.create("redis://worker:w0rk@127.0.0.1:" + server.port);
                RLockClient other = TestClients.create("redis://worker:w0rk@127.0.0.1:" + server.port)) {
            RLock lock = client.getLock("locks:a");
            lock.lock();
            CompletableFuture<Void> waiter = Async.run(() -> {
                RLock mine = other.getLock("locks:a");
                mine.lock();
                mine.unlock();
            });
            eventually(5000, "queued", () -> Admin.waiters(admin, "locks:a") == 1);
            lock.unlock();
            waiter.get(5, TimeUnit.SECONDS);
            RLockException outside = assertThrows(RLockException.class, () -> client.getLock("elsewhere").tryLock());
            assertEquals("NOPERM", outside.code());
        }
        RLockException deaf = assertThrows(RLockException.class, () -> TestClients.create("redis://deaf:pw@127.0.0.1:" + server.port));
        assertTrue(deaf.getMessage().contains("__rlock__"), "says what is missing: " + deaf.getMessage());
    }
}
