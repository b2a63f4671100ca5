package io.rlock.vthreads;

import io.rlock.testing.TestClients;
import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.RSemaphore;
import io.rlock.testing.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * 10,000 virtual threads contend for one lock, then for a semaphore of 4 permits, on 4 carriers
 * of which 2 are pinned the whole time: never more holders than allowed, every unlock by its
 * owning virtual thread succeeds, and the contention finishes on the 2 carriers left. JFR's
 * {@code jdk.VirtualThreadPinned} shows the pinning was real and that no pinning came from rlock.
 */
class VirtualThreadsTest {
    static final int THREADS = 10_000;
    static RedisServer server;
    static RLockClient client;
    static RecordingStream jfr;
    static final Queue<RecordedEvent> pinned = new ConcurrentLinkedQueue<>();
    static final List<Thread> pinners = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        assertThat(Runtime.version().feature()).as("runs on Temurin 25").isGreaterThanOrEqualTo(25);
        server = RedisServer.start();
        client = TestClients.create(server.uri());
        jfr = new RecordingStream();
        jfr.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ofMillis(20)).withStackTrace();
        jfr.onEvent("jdk.VirtualThreadPinned", pinned::add);
        jfr.startAsync();
        pinners.add(Thread.ofVirtual().start(Pinner.First::touch));
        pinners.add(Thread.ofVirtual().start(Pinner.Second::touch));
        assertThat(Pinner.PINNED.await(60, TimeUnit.SECONDS)).as("two carriers pinned").isTrue();
    }

    @AfterAll
    static void stop() throws Exception {
        Pinner.RELEASE.countDown();
        for (Thread pinner : pinners) {
            pinner.join(60_000);
        }
        // The pinned parks are reported when they end: both pinners', and none from rlock's code.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (pinnedBy("io.rlock.vthreads.Pinner") < 2 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        jfr.close();
        client.close();
        server.close();
        System.out.printf("jdk.VirtualThreadPinned: %d events, %d with the test's pinners, %d with rlock's frames%n",
                pinned.size(), pinnedBy("io.rlock.vthreads.Pinner"), pinnedBy("io.rlock.internal"));
        assertThat(pinnedBy("io.rlock.vthreads.Pinner")).as("the two carriers were pinned").isGreaterThanOrEqualTo(2);
        assertThat(pinnedBy("io.rlock.internal")).as("rlock's client never pins a carrier").isZero();
    }

    /** Pinned events with a frame of a class whose name starts with {@code prefix}. */
    static long pinnedBy(String prefix) {
        return pinned.stream().filter(event -> event.getStackTrace() != null && event.getStackTrace().getFrames()
                .stream().map(RecordedFrame::getMethod).anyMatch(m -> m.getType().getName().startsWith(prefix)))
                .count();
    }

    /** Starts {@link #THREADS} virtual threads running {@code body}, joins them, and returns how many failed. */
    static List<Throwable> onVirtualThreads(ThrowingRunnable body) throws InterruptedException {
        Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>(THREADS);
        for (int i = 0; i < THREADS; i++) {
            threads.add(Thread.ofVirtual().name("contender-" + i).start(() -> {
                try {
                    body.run();
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        return new ArrayList<>(failures);
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    @Timeout(300)
    void tenThousandVirtualThreadsOneLock() throws Exception {
        RLock lock = client.getLock("vt:lock");
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger entries = new AtomicInteger();
        long started = System.nanoTime();
        List<Throwable> failures = onVirtualThreads(() -> {
            lock.lock();
            try {
                most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                entries.incrementAndGet();
                assertThat(lock.isHeldByCurrentThread()).isTrue();
                inside.decrementAndGet();
            } finally {
                lock.unlock(); // from its owning virtual thread: must succeed
            }
        });
        System.out.printf("lock: %d virtual threads on 2 free carriers in %d ms%n", THREADS,
                (System.nanoTime() - started) / 1_000_000);
        assertThat(failures).isEmpty();
        assertThat(entries.get()).isEqualTo(THREADS);
        assertThat(most.get()).isEqualTo(1);
        assertThat(lock.isLocked()).isFalse();
        assertThat(Pinner.RELEASE.getCount()).as("the carriers stayed pinned throughout").isEqualTo(1);
    }

    @Test
    @Timeout(300)
    void tenThousandVirtualThreadsOneSemaphore() throws Exception {
        RSemaphore semaphore = client.getSemaphore("vt:semaphore");
        assertThat(semaphore.trySetPermits(4)).isTrue();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        long started = System.nanoTime();
        List<Throwable> failures = onVirtualThreads(() -> {
            semaphore.acquire();
            try {
                most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                inside.decrementAndGet();
            } finally {
                semaphore.release();
            }
        });
        System.out.printf("semaphore: %d virtual threads on 2 free carriers in %d ms%n", THREADS,
                (System.nanoTime() - started) / 1_000_000);
        assertThat(failures).isEmpty();
        assertThat(most.get()).isBetween(1, 4);
        assertThat(semaphore.availablePermits()).isEqualTo(4);
        assertThat(Pinner.RELEASE.getCount()).as("the carriers stayed pinned throughout").isEqualTo(1);
    }
}
