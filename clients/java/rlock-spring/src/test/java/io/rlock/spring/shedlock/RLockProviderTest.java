package io.rlock.spring.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rlock.spring.ServerFixture;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The provider in one process: two providers stand for two application instances. */
class RLockProviderTest {
    static ServerFixture fixture;
    static RLockProvider first;
    static RLockProvider second;
    /** The other instance's scheduler thread. */
    static final ExecutorService otherThread = Executors.newSingleThreadExecutor();

    @BeforeAll
    static void start() throws Exception {
        fixture = ServerFixture.start();
        first = new RLockProvider(fixture.connectionFactory);
        second = new RLockProvider(fixture.connectionFactory);
    }

    @AfterAll
    static void stop() {
        otherThread.shutdownNow();
        first.destroy();
        second.destroy();
        fixture.close();
    }

    static LockConfiguration job(String name, Duration atMost, Duration atLeast) {
        return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
    }

    static <T> T onOtherInstance(Callable<T> call) throws Exception {
        return otherThread.submit(call).get();
    }

    /** The other instance's lock of job {@code name}, tried every 10 ms until it is free. */
    static SimpleLock takenByTheOtherInstance(String name) throws InterruptedException {
        SimpleLock[] taken = new SimpleLock[1];
        ServerFixture.eventually(20_000, "the other instance takes " + name, () -> {
            try {
                taken[0] = onOtherInstance(() -> second.lock(job(name, Duration.ofSeconds(30), Duration.ZERO)))
                        .orElse(null);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return taken[0] != null;
        });
        return taken[0];
    }

    @Test
    void oneRunAtATimeAcrossInstancesAndNoReentry() throws Exception {
        LockConfiguration config = job("report", Duration.ofSeconds(30), Duration.ZERO);
        SimpleLock run = first.lock(config).orElseThrow();
        assertThat(fixture.lockInfo("job-lock:default:report").get("watchdog")).isNotNull();
        assertThat(first.lock(config)).isEmpty();
        assertThat(onOtherInstance(() -> second.lock(job("report", Duration.ofSeconds(30), Duration.ZERO))))
                .isEmpty();
        run.unlock();
        assertThat(fixture.lockInfo("job-lock:default:report")).isEmpty();
        Optional<SimpleLock> next = onOtherInstance(() -> second.lock(job("report", Duration.ofSeconds(30), Duration.ZERO)));
        assertThat(next).isPresent();
        onOtherInstance(() -> {
            next.get().unlock();
            return null;
        });
        assertThatThrownBy(run::unlock).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void lockAtMostForCapsTheHold() throws Exception {
        LockConfiguration config = job("capped", Duration.ofMillis(1_000), Duration.ZERO);
        SimpleLock run = first.lock(config).orElseThrow();
        assertThat(onOtherInstance(() -> second.lock(job("capped", Duration.ofSeconds(30), Duration.ZERO)))).isEmpty();
        SimpleLock taken = takenByTheOtherInstance("capped");
        // Never before the cap (the same clock decided both).
        assertThat(Instant.now()).isAfterOrEqualTo(config.getLockAtMostUntil());
        run.unlock(); // the capped run's unlock is silent and leaves the new holding alone
        assertThat(fixture.lockInfo("job-lock:default:capped")).containsEntry("holds", 1L);
        onOtherInstance(() -> {
            taken.unlock();
            return null;
        });
    }

    @Test
    void anEarlyUnlockLeavesTheLockHeldUntilLockAtLeastForEvenWhenTheProcessIsGone() throws Exception {
        try (var client = io.rlock.testing.TestClients.create(fixture.server.uri())) {
            RLockProvider doomed = new RLockProvider(client, fixture.connectionFactory, "default", "job-lock");
            LockConfiguration config = job("atleast", Duration.ofSeconds(30), Duration.ofMillis(1_500));
            doomed.lock(config).orElseThrow().unlock();
            doomed.destroy();
            // The lease left behind belongs to no connection: closing the client changes nothing.
            client.close();
            var info = fixture.lockInfo("job-lock:default:atleast");
            assertThat(info.get("watchdog")).isNull();
            assertThat(String.valueOf(info.get("owner"))).startsWith("shedlock-at-least:");
            assertThat((Long) info.get("ttl")).isBetween(1L, 1_500L);
            assertThat(onOtherInstance(() -> second.lock(job("atleast", Duration.ofSeconds(30), Duration.ZERO))))
                    .isEmpty();
            SimpleLock taken = takenByTheOtherInstance("atleast");
            assertThat(Instant.now()).isAfterOrEqualTo(config.getLockAtLeastUntil());
            onOtherInstance(() -> {
                taken.unlock();
                return null;
            });
        }
    }

    @Test
    void extendMovesTheCapAndKeepsTheHolding() throws Exception {
        SimpleLock run = first.lock(job("extended", Duration.ofMillis(800), Duration.ZERO)).orElseThrow();
        Object token = fixture.lockInfo("job-lock:default:extended").get("token");
        SimpleLock longer = run.extend(Duration.ofSeconds(30), Duration.ZERO).orElseThrow();
        Thread.sleep(1_500); // past the first cap: the extension must have cancelled it
        assertThat(fixture.lockInfo("job-lock:default:extended")).containsEntry("token", token);
        longer.unlock();
        assertThat(fixture.lockInfo("job-lock:default:extended")).isEmpty();
    }

    @Test
    void badInputsAreRefused() {
        assertThatThrownBy(() -> new RLockProvider(fixture.connectionFactory, "")).isInstanceOf(
                IllegalArgumentException.class);
        assertThatThrownBy(() -> new RLockProvider(null, fixture.connectionFactory, "default", "job-lock"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
