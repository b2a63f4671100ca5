package io.rlock.fleet;

import io.rlock.testing.TestClients;
import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.RLockClient;
import io.rlock.testing.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import redis.clients.jedis.Jedis;

/**
 * Redisson 4.7.0's scripts and rlock's client on the same names, on one server with the module:
 * they exclude each other, and a waiter on either side is woken by a release on the other side.
 */
class MixedFleetTest {
    static RedisServer server;
    static RedissonClient redisson;
    static RLockClient rlock;
    static Jedis admin;
    static int names;

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start();
        Config config = new Config();
        config.useSingleServer().setAddress("redis://127.0.0.1:" + server.port)
                .setConnectionMinimumIdleSize(2).setConnectionPoolSize(8)
                .setSubscriptionConnectionMinimumIdleSize(1);
        redisson = Redisson.create(config);
        rlock = TestClients.create(server.uri());
        admin = new Jedis("127.0.0.1", server.port);
    }

    @AfterAll
    static void stop() {
        admin.close();
        rlock.close();
        redisson.shutdown();
        server.close();
    }

    /** A side of the fleet: its gates, on its own thread (the owner of its holds). */
    record Side(String name, ExecutorService thread, Gate holder, Gate waiter, AtomicReference<Thread> worker)
            implements AutoCloseable {
        Side(String name, Gate holder, Gate waiter) {
            this(name, holder, waiter, new AtomicReference<>());
        }

        private Side(String name, Gate holder, Gate waiter, AtomicReference<Thread> worker) {
            this(name, Executors.newSingleThreadExecutor(runnable -> {
                Thread thread = new Thread(runnable, name + "-side");
                worker.set(thread);
                return thread;
            }), holder, waiter, worker);
        }

        /**
         * Whether the side's thread is parked in a Redisson wait: Redisson's blocking calls end
         * in {@code Semaphore.tryAcquire} on their entry's latch, after their last try, until a
         * message (or the wait the try gave them) releases it.
         */
        boolean parkedInRedissonWait() {
            Thread thread = worker.get();
            return thread != null && thread.getState() == Thread.State.TIMED_WAITING
                    && java.util.Arrays.stream(thread.getStackTrace()).anyMatch(frame -> frame.getClassName()
                            .equals("java.util.concurrent.Semaphore") && frame.getMethodName().equals("tryAcquire"));
        }

        <T> Future<T> run(Callable<T> call) {
            return thread.submit(call);
        }

        <T> T now(Callable<T> call) throws Exception {
            return run(call).get(60, TimeUnit.SECONDS);
        }

        @Override
        public void close() {
            thread.shutdownNow();
        }
    }

    static Side redissonSide(Primitive primitive, String name) {
        return new Side("redisson", primitive.redisson(redisson, name), primitive.redissonWaiter(redisson, name));
    }

    static Side rlockSide(Primitive primitive, String name) {
        return new Side("rlock", primitive.rlock(rlock, name), primitive.rlockWaiter(rlock, name));
    }

    @ParameterizedTest
    @EnumSource(Primitive.class)
    void aRedissonReleaseWakesAnRlockWaiter(Primitive primitive) throws Exception {
        String name = "fleet:" + primitive + ":" + names++;
        try (Side holder = redissonSide(primitive, name); Side waiter = rlockSide(primitive, name)) {
            long ms = wakeUp(primitive, holder, waiter, () -> rlockWaiters() > 0);
            assertThat(ms).as("%s: rlock waiter woken %d ms after Redisson's release", primitive, ms)
                    .isLessThan(1_000);
        }
    }

    /**
     * For the fair lock, Redisson's waiter listens on its own channel,
     * {@code redisson_lock__channel:{name}:<its id>}: the server's release publishes there for
     * the first live id of {@code redisson_lock_queue:{name}} when no rlock waiter takes the lock.
     */
    @ParameterizedTest
    @EnumSource(Primitive.class)
    void anRlockReleaseWakesARedissonWaiter(Primitive primitive) throws Exception {
        String name = "fleet:" + primitive + ":" + names++;
        try (Side holder = rlockSide(primitive, name); Side waiter = redissonSide(primitive, name)) {
            long ms = wakeUp(primitive, holder, waiter, waiter::parkedInRedissonWait);
            assertThat(ms).as("%s: Redisson waiter woken %d ms after rlock's release", primitive, ms)
                    .isLessThan(1_000);
        }
    }

    /**
     * The holder takes every permit; the waiter cannot enter now, then waits (as {@code waiting}
     * shows); the holder leaves once: the time from that release to the waiter's entry, in ms.
     */
    static long wakeUp(Primitive primitive, Side holder, Side waiter, BooleanSupplier waiting) throws Exception {
        for (int i = 0; i < primitive.permits; i++) {
            assertThat(holder.now(() -> holder.holder().enter(0))).as("%s holds", holder.name()).isTrue();
        }
        assertThat(waiter.now(() -> waiter.waiter().enter(0))).as("excluded while the other side holds").isFalse();
        Future<Long> entered = waiter.run(() -> waiter.waiter().enter(30_000) ? System.nanoTime() : -1L);
        eventually(20_000, waiter.name() + " waits", waiting);
        long released = holder.now(() -> {
            long at = System.nanoTime();
            holder.holder().leave();
            return at;
        });
        long at = entered.get(60, TimeUnit.SECONDS);
        assertThat(at).as("%s entered within its wait", waiter.name()).isPositive();
        long ms = (at - released) / 1_000_000;
        System.out.printf("%s: %s waiter entered %d ms after %s's release%n", primitive, waiter.name(), ms,
                holder.name());
        waiter.now(() -> {
            waiter.waiter().leave();
            return null;
        });
        for (int i = 1; i < primitive.permits; i++) {
            holder.now(() -> {
                holder.holder().leave();
                return null;
            });
        }
        return ms;
    }

    static final int ROUNDS = 10;

    /** Two threads of each side take turns ROUNDS times each: never more inside than the primitive lets in. */
    @ParameterizedTest
    @EnumSource(Primitive.class)
    void bothSidesExcludeEachOtherUnderContention(Primitive primitive) throws Exception {
        String name = "fleet:contended:" + primitive + ":" + names++;
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger entries = new AtomicInteger();
        java.util.Map<String, AtomicInteger> timeouts = new java.util.concurrent.ConcurrentHashMap<>(
                java.util.Map.of("redisson", new AtomicInteger(), "rlock", new AtomicInteger()));
        java.util.concurrent.atomic.AtomicLong longest = new java.util.concurrent.atomic.AtomicLong();
        List<Side> sides = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            sides.add(redissonSide(primitive, name));
            sides.add(rlockSide(primitive, name));
        }
        try {
            List<Future<Object>> runs = new ArrayList<>();
            for (Side side : sides) {
                // The waiter's gate: for READ_THEN_WRITE, writers on both sides.
                runs.add(side.run(() -> {
                    for (int i = 0; i < ROUNDS; i++) {
                        long asked = System.nanoTime();
                        while (!side.waiter().enter(5_000)) {
                            timeouts.get(side.name()).incrementAndGet();
                        }
                        longest.accumulateAndGet((System.nanoTime() - asked) / 1_000_000, Math::max);
                        int now = inside.incrementAndGet();
                        most.accumulateAndGet(now, Math::max);
                        entries.incrementAndGet();
                        inside.decrementAndGet();
                        side.waiter().leave();
                    }
                    return null;
                }));
            }
            for (Future<Object> run : runs) {
                run.get(120, TimeUnit.SECONDS);
            }
        } finally {
            sides.forEach(Side::close);
        }
        System.out.printf("%s contended: %d entries, at most %d inside, longest wait %d ms, waits of 5 s timed out %s%n",
                primitive, entries.get(), most.get(), longest.get(), timeouts);
        assertThat(entries.get()).isEqualTo(4 * ROUNDS);
        assertThat(most.get()).isBetween(1, primitive.permits);
    }

    static long rlockWaiters() {
        String info = admin.info("rlock");
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("rlock_waiters:")) {
                return Long.parseLong(line.substring("rlock_waiters:".length()).trim());
            }
        }
        throw new IllegalStateException("INFO rlock has no rlock_waiters: " + info);
    }

    static void eventually(long ms, String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + ms * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + ms + " ms: " + what);
            }
            Thread.sleep(5);
        }
    }
}
