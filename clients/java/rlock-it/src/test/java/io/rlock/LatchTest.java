package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import io.rlock.testing.Async;

class LatchTest extends TwoClients {
    LatchTest() {
        super("latch");
    }

    @Test
    void timeoutsEachEndTheirOwnWait() throws Exception {
        RCountDownLatch latch = client.getCountDownLatch(name);
        latch.trySetCount(1);
        CompletableFuture<Boolean> longWait = Async.call(() -> latch.await(3, TimeUnit.SECONDS));
        Thread.sleep(50);
        long start = System.nanoTime();
        CompletableFuture<Boolean> shortWait = Async.call(() -> latch.await(200, TimeUnit.MILLISECONDS));
        assertFalse(shortWait.get(5, TimeUnit.SECONDS));
        long waited = (System.nanoTime() - start) / 1_000_000;
        assertTrue(waited >= 190 && waited < 1500, "the short wait ended after " + waited + " ms");
        assertFalse(longWait.isDone(), "the longer wait, queued first, still waits");
        latch.countDown();
        assertTrue(longWait.get(5, TimeUnit.SECONDS));
    }

    @Test
    void anInterruptEndsAWait() throws Exception {
        RCountDownLatch latch = client.getCountDownLatch(name);
        latch.trySetCount(1);
        Async.Interruptible waiter = Async.interruptible(latch::await);
        CompletableFuture<Void> stays = Async.run(latch::await);
        Thread.sleep(100);
        waiter.interrupt();
        waiter.done().get(5, TimeUnit.SECONDS);
        Thread.sleep(50);
        assertFalse(stays.isDone(), "the other wait on the same latch is not disturbed");
        latch.countDown();
        stays.get(5, TimeUnit.SECONDS);
    }

    @Test
    void anUnsetLatchIsOpen() throws Exception {
        RCountDownLatch latch = client.getCountDownLatch(name);
        assertEquals(0, latch.getCount());
        latch.await();
        latch.countDown();
        assertEquals(0, latch.getCount());
        assertThrows(IllegalArgumentException.class, () -> latch.trySetCount(0));
    }
}
