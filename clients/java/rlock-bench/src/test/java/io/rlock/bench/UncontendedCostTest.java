package io.rlock.bench;

import io.rlock.RLock;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What 100 uncontended acquire+release pairs of our client cost, counted exactly (issue 46: a
 * benchmark is noisy, a count is not): one command per acquire and one per release (with a
 * replica, each pipelined with one WAIT), no new connection, no thread started. Counted on the
 * client the bench measures ({@link Side#ourClient}), for lock() (the watchdog), a fixed lease
 * and tryLock().
 */
class UncontendedCostTest {
    private static final int PAIRS = 100;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /**
     * The module's own look for listeners before it publishes a release (src/notify.rs): a call
     * inside the server that INFO commandstats counts too; the client sends no such command.
     */
    private static final String MODULE_INTERNAL = "pubsub|numsub";
    /** Confirm.auto()'s count of the replicas, read at most once a second whatever the pairs. */
    private static final String REPLICA_COUNT = "role";

    @Test
    void aPairIsOneAcquireAndOneReleaseOnAReusedConnectionWithNoThreadStarted() throws Exception {
        try (RedisServer server = RedisServer.start(); AdminConnection admin = server.admin();
                Side.OurClient client = Side.ourClient(server.uri())) {
            RLock lock = client.locks().getLock("cost:plain");
            for (Lock form : forms(lock)) {
                Cost cost = Cost.of(admin, form);
                assertThat(cost.commands).as("commands per %d pairs of %s", PAIRS, form)
                        .isEqualTo(Map.of("rlock.acquire", (long) PAIRS, "rlock.release", (long) PAIRS));
                assertThat(cost.moduleInternal).as("the module's own PUBSUB NUMSUB").isLessThanOrEqualTo(PAIRS);
                cost.assertReplicaCountReadAtMostOnceASecond();
                assertThat(cost.wire.connections).as("new connections per %d pairs", PAIRS).isZero();
                assertThat(cost.threadsStarted).as("threads started per %d pairs", PAIRS).isZero();
            }
        }
    }

    @Test
    void withAReplicaEachWriteIsConfirmedByOneWaitAndNothingElse() throws Exception {
        try (Replicated servers = Replicated.start()) {
            RLock lock = servers.client.locks().getLock("cost:synced");
            for (Lock form : forms(lock)) {
                Cost cost = Cost.of(servers.admin, form);
                cost.assertReplicaCountReadAtMostOnceASecond();
                assertThat(cost.commands).as("commands per %d confirmed pairs of %s", PAIRS, form).isEqualTo(
                        Map.of("rlock.acquire", (long) PAIRS, "rlock.release", (long) PAIRS, "wait", 2L * PAIRS));
                assertThat(cost.wire.connections).as("new connections per %d pairs", PAIRS).isZero();
                assertThat(cost.threadsStarted).as("threads started per %d pairs", PAIRS).isZero();
            }
        }
    }

    /** lock() with the watchdog, lock() with a lease, tryLock(): the uncontended forms a user writes. */
    private static List<Lock> forms(RLock lock) {
        return List.of(lock, new Form(lock, "lock(10 s)") {
            @Override
            public void lock() {
                lock.lock(10, TimeUnit.SECONDS);
            }
        }, new Form(lock, "tryLock()") {
            @Override
            public void lock() {
                if (!lock.tryLock()) {
                    throw new AssertionError("an uncontended tryLock() refused");
                }
            }
        });
    }

    /** One form of acquiring, as a {@link Lock} that {@link Wire#count} can loop over. */
    private abstract static class Form implements Lock {
        final RLock lock;
        private final String name;

        Form(RLock lock, String name) {
            this.lock = lock;
            this.name = name;
        }

        @Override
        public void unlock() {
            lock.unlock();
        }

        @Override
        public void lockInterruptibly() {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean tryLock() {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) {
            throw new UnsupportedOperationException();
        }

        @Override
        public java.util.concurrent.locks.Condition newCondition() {
            throw new UnsupportedOperationException();
        }

        @Override
        public String toString() {
            return name;
        }
    }

    /** One form's counts over {@link #PAIRS} pairs, after a first pair that sets up what is reused. */
    private record Cost(Wire wire, Map<String, Long> commands, long moduleInternal, long replicaCounts, long seconds,
            long threadsStarted) {
        static Cost of(AdminConnection admin, Lock form) {
            form.lock();
            form.unlock();
            long threadsBefore = THREADS.getTotalStartedThreadCount();
            long start = System.nanoTime();
            Wire wire = Wire.count(admin, form, PAIRS);
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            long threadsStarted = THREADS.getTotalStartedThreadCount() - threadsBefore;
            Map<String, Long> commands = new TreeMap<>(wire.commands);
            Long internal = commands.remove(MODULE_INTERNAL);
            Long roles = commands.remove(REPLICA_COUNT);
            return new Cost(wire, commands, internal == null ? 0 : internal, roles == null ? 0 : roles, seconds, threadsStarted);
        }

        /** A ROLE per started second of the window at most (one may fall in any window): not per pair. */
        void assertReplicaCountReadAtMostOnceASecond() {
            assertThat(replicaCounts).as("ROLE reads in %d s", seconds).isLessThanOrEqualTo(seconds + 1);
        }
    }
}
