package io.rlock.bench;

import io.rlock.testing.AdminConnection;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.Lock;

/**
 * The four workloads of issue 46, the same for every side (the Python and Node pairs' shapes):
 * each returns its figures by name for one round of {@code roundMs}.
 */
final class Workloads {
    private final long roundNanos;
    private final int contenders;

    Workloads(long roundMs, int contenders) {
        this.roundNanos = TimeUnit.MILLISECONDS.toNanos(roundMs);
        this.contenders = contenders;
    }

    /** One caller, acquire then release as fast as it can: {@code pairs_per_s}. */
    Map<String, Double> uncontended(Side side, String key) {
        Lock lock = side.lock(key);
        lock.lock(); // one pair outside the clock: connections and scripts are set up by then
        lock.unlock();
        long pairs = 0;
        long start = System.nanoTime();
        long end = start + roundNanos;
        long now;
        do {
            lock.lock();
            lock.unlock();
            pairs++;
        } while ((now = System.nanoTime()) < end);
        return Map.of("pairs_per_s", pairs * 1e9 / (now - start));
    }

    /** {@link #contenders} threads, each on its own name, through one client: {@code pairs_per_s} in all. */
    Map<String, Double> concurrent(Side side, String key) throws InterruptedException {
        long[] counts = new long[contenders];
        Thread[] threads = new Thread[contenders];
        long[] bounds = new long[2];
        Semaphore ready = new Semaphore(0);
        Semaphore go = new Semaphore(0);
        for (int i = 0; i < contenders; i++) {
            int index = i;
            Lock lock = side.lock(key + ":" + i);
            threads[i] = new Thread(() -> {
                lock.lock();
                lock.unlock();
                ready.release();
                go.acquireUninterruptibly();
                long end = bounds[1];
                long pairs = 0;
                do {
                    lock.lock();
                    lock.unlock();
                    pairs++;
                } while (System.nanoTime() < end);
                counts[index] = pairs;
            }, "concurrent-" + i);
            threads[i].start();
        }
        ready.acquire(contenders);
        bounds[0] = System.nanoTime();
        bounds[1] = bounds[0] + roundNanos;
        go.release(contenders); // the release publishes bounds to every thread
        for (Thread thread : threads) {
            thread.join();
        }
        long elapsed = System.nanoTime() - bounds[0];
        return Map.of("pairs_per_s", Arrays.stream(counts).sum() * 1e9 / elapsed);
    }

    /**
     * A hot lock: {@link #contenders} threads acquire one name and release at once, in a loop
     * ({@code acquires_per_s}, {@code p99_ms} and {@code max_wait_ms} of the waits, the most and
     * fewest acquisitions of one thread, the client's CPU per acquisition). A wait unfinished
     * when the round ends counts with its time so far.
     */
    Map<String, Double> hot(Side side, String key) throws InterruptedException {
        Lock lock = side.lock(key);
        ConcurrentLinkedQueue<Long> waits = new ConcurrentLinkedQueue<>();
        AtomicLongArray pending = new AtomicLongArray(contenders);
        long[] counts = new long[contenders];
        long[] bounds = new long[2];
        Semaphore ready = new Semaphore(0);
        Semaphore go = new Semaphore(0);
        Thread[] threads = new Thread[contenders];
        for (int i = 0; i < contenders; i++) {
            int index = i;
            threads[i] = new Thread(() -> {
                lock.lock();
                lock.unlock();
                ready.release();
                go.acquireUninterruptibly();
                long end = bounds[1];
                while (true) {
                    long asked = System.nanoTime();
                    pending.set(index, asked);
                    lock.lock();
                    long got = System.nanoTime();
                    pending.set(index, 0);
                    if (got >= end) {
                        lock.unlock();
                        break;
                    }
                    waits.add(got - asked);
                    counts[index]++;
                    lock.unlock();
                }
            }, "hot-" + i);
            threads[i].start();
        }
        ready.acquire(contenders);
        long cpu = processCpuNanos();
        bounds[0] = System.nanoTime();
        bounds[1] = bounds[0] + roundNanos;
        go.release(contenders);
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(roundNanos));
        while (System.nanoTime() < bounds[1]) {
            Thread.onSpinWait();
        }
        long end = bounds[1];
        List<Long> every = new ArrayList<>(waits);
        int unfinished = 0;
        for (int i = 0; i < contenders; i++) {
            long asked = pending.get(i);
            if (asked != 0 && asked < end) {
                every.add(end - asked);
                unfinished++;
            }
        }
        for (Thread thread : threads) {
            thread.join();
        }
        cpu = processCpuNanos() - cpu;
        every.sort(null);
        Map<String, Double> figures = new LinkedHashMap<>();
        figures.put("acquires_per_s", waits.size() * 1e9 / roundNanos);
        figures.put("p99_ms", every.isEmpty() ? Double.NaN
                : every.get(Math.max(0, (int) Math.ceil(0.99 * every.size()) - 1)) / 1e6);
        // The p99 is over acquisitions (a starved thread weighs once): the longest wait shows it.
        figures.put("max_wait_ms", every.isEmpty() ? Double.NaN : every.get(every.size() - 1) / 1e6);
        figures.put("max_per_contender", (double) Arrays.stream(counts).max().orElse(0));
        figures.put("min_per_contender", (double) Arrays.stream(counts).min().orElse(0));
        figures.put("unfinished_waits", (double) unfinished);
        // The whole JVM's (its JIT and GC threads too) over the round, per acquisition.
        figures.put("cpu_us_per_acquire", waits.isEmpty() ? Double.NaN : cpu / 1e3 / waits.size());
        return figures;
    }

    /** CPU time of every thread of this JVM so far, in ns. */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /**
     * Time from a release to the next holder: this thread holds, another waits (seen on the
     * server: {@link Side#waiting}), this one releases, the other notes when its lock() returned.
     * {@code median_ms} and {@code max_ms} of the round's hand-offs.
     */
    Map<String, Double> handoff(Side side, String key, AdminConnection admin) throws InterruptedException {
        Lock lock = side.lock(key);
        Semaphore asking = new Semaphore(0);
        Semaphore done = new Semaphore(0);
        long[] got = new long[1];
        boolean[] stop = {false};
        Thread waiter = new Thread(() -> {
            while (true) {
                asking.acquireUninterruptibly();
                if (stop[0]) {
                    return;
                }
                lock.lock();
                got[0] = System.nanoTime();
                lock.unlock();
                done.release();
            }
        }, "handoff-waiter");
        waiter.start();
        List<Long> handoffs = new ArrayList<>();
        long end = System.nanoTime() + roundNanos;
        try {
            while (System.nanoTime() < end) {
                lock.lock();
                asking.release();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!side.waiting(admin, key)) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException(side.name + ": no waiter for " + key + " seen within 30 s");
                    }
                    Thread.onSpinWait();
                }
                long released = System.nanoTime();
                lock.unlock();
                done.acquire();
                handoffs.add(got[0] - released); // done's release published got[0]
            }
        } finally {
            stop[0] = true;
            asking.release();
            waiter.join();
        }
        handoffs.sort(null);
        return Map.of("median_ms", handoffs.get(handoffs.size() / 2) / 1e6, "max_ms", handoffs.get(handoffs.size() - 1) / 1e6);
    }
}
