package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static io.rlock.testing.Admin.eventually;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.RedisServer;

/** 1,000 threads of one JVM waiting on one lock share one connection and block none. */
class ManyWaitersTest {
    @Test
    void aThousandWaitingThreadsUseOneConnection() throws Exception {
        int threads = 1000;
        String name = "many:waiters";
        try (RedisServer server = RedisServer.start(); AdminConnection admin = server.admin();
                RLockClient client = TestClients.create(server.uri())) {
            RLock lock = client.getLock(name);
            lock.lock();
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger overlaps = new AtomicInteger();
            AtomicInteger granted = new AtomicInteger();
            AtomicInteger failed = new AtomicInteger();
            CountDownLatch done = new CountDownLatch(threads);
            List<Thread> started = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                Thread thread = new Thread(() -> {
                    try {
                        lock.lock();
                        try {
                            if (inside.incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            granted.incrementAndGet();
                            inside.decrementAndGet();
                        } finally {
                            lock.unlock();
                        }
                    } catch (RuntimeException e) {
                        failed.incrementAndGet();
                    } finally {
                        done.countDown();
                    }
                }, "waiter-" + i);
                thread.setDaemon(true);
                thread.start();
                started.add(thread);
            }
            eventually(30_000, "all queued", () -> Admin.waiters(admin, name) == threads);
            assertEquals("0", Admin.infoField(admin, "clients", "blocked_clients"), "nobody blocks a connection");
            assertEquals(1, Admin.clientsNamed(admin, "rlock-java:" + client.getId()).size(),
                    "one connection for every call and wait of the client");
            assertEquals(threads, client.waiters());
            lock.unlock();
            done.await(60, TimeUnit.SECONDS);
            assertEquals(0, failed.get());
            assertEquals(threads, granted.get());
            assertEquals(0, overlaps.get());
            assertEquals(0, client.waiters());
            assertEquals(null, Admin.info(admin, "RLOCK.INFO", name));
        }
    }
}
