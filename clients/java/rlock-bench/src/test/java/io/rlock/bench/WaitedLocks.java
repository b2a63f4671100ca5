package io.rlock.bench;

import io.rlock.RLock;
import io.rlock.testing.Admin;
import io.rlock.testing.AdminConnection;

import java.util.concurrent.Semaphore;
import java.util.function.LongSupplier;

/**
 * The waited locks that WaitedCostTest and WaitedAllocationTest count: {@code waits} times, this
 * thread holds the lock, another thread asks for it, and this one releases once the server has
 * the other queued, so that every lock() of the other waits and is granted by a message.
 */
final class WaitedLocks {
    private WaitedLocks() {
    }

    /**
     * How much {@code counter}, read on the waiting thread, grew across its lock() calls (and
     * their unlock() calls too when {@code withUnlock}).
     */
    static long count(AdminConnection admin, RLock lock, int waits, LongSupplier counter, boolean withUnlock)
            throws InterruptedException {
        Semaphore asked = new Semaphore(0);
        Semaphore finished = new Semaphore(0);
        long[] grown = {0};
        RuntimeException[] failed = {null};
        Thread waiter = new Thread(() -> {
            try {
                for (int i = 0; i < waits; i++) {
                    asked.acquireUninterruptibly();
                    long before = counter.getAsLong();
                    lock.lock();
                    if (!withUnlock) {
                        grown[0] += counter.getAsLong() - before;
                    }
                    lock.unlock();
                    if (withUnlock) {
                        grown[0] += counter.getAsLong() - before;
                    }
                    finished.release();
                }
            } catch (RuntimeException e) {
                failed[0] = e;
                finished.release(waits);
            }
        }, "waited-lock");
        waiter.start();
        for (int i = 0; i < waits && failed[0] == null; i++) {
            lock.lock();
            asked.release();
            Admin.eventually(10_000, "the waiter queued for " + lock.getName(), () -> Admin.waiters(admin, lock.getName()) > 0);
            lock.unlock();
            finished.acquire();
        }
        waiter.join();
        if (failed[0] != null) {
            throw failed[0];
        }
        return grown[0]; // the join published it
    }
}
