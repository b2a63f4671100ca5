package io.rlock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rlock.spring.ServerFixture;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.integration.support.locks.DistributedLock;

/** The registry in one process: two registries stand for two application instances. */
class RLockRegistryTest {
    static ServerFixture fixture;
    static RLockRegistry first;
    static RLockRegistry second;
    static final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeAll
    static void start() throws Exception {
        fixture = ServerFixture.start();
        first = new RLockRegistry(fixture.connectionFactory, "app");
        second = new RLockRegistry(fixture.connectionFactory, "app");
    }

    @AfterAll
    static void stop() {
        threads.shutdownNow();
        first.destroy();
        second.destroy();
        fixture.close();
    }

    @Test
    void instancesExcludeEachOtherAndAWaiterIsWokenByTheRelease() throws Exception {
        Lock mine = first.obtain("orders");
        mine.lock();
        assertThat(fixture.lockInfo("app:orders")).containsEntry("holds", 1L).containsKey("watchdog");
        assertThat(fixture.lockInfo("app:orders").get("watchdog")).isNotNull();
        assertThat(threads.submit(() -> second.obtain("orders").tryLock()).get()).isFalse();

        CompletableFuture<Long> granted = CompletableFuture.supplyAsync(() -> {
            Lock theirs = second.obtain("orders");
            try {
                if (!theirs.tryLock(30, TimeUnit.SECONDS)) {
                    return -1L;
                }
                long at = System.nanoTime();
                theirs.unlock();
                return at;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }, threads);
        ServerFixture.eventually(10_000, "the other instance waits in the queue",
                () -> Long.valueOf(1).equals(fixture.lockInfo("app:orders").get("waiters")));
        long released = System.nanoTime();
        mine.unlock();
        long wokenMs = (granted.get(30, TimeUnit.SECONDS) - released) / 1_000_000;
        // Woken by the release itself (no polling interval, no lease): generous for a loaded machine.
        assertThat(wokenMs).isLessThan(1_000);
        assertThat(fixture.lockInfo("app:orders")).isEmpty();
    }

    @Test
    void theOwnerIsTheThreadAndItReenters() throws Exception {
        Lock lock = first.obtain("reentry");
        lock.lock();
        assertThat(lock.tryLock()).isTrue();
        assertThat(fixture.lockInfo("app:reentry")).containsEntry("holds", 2L);
        assertThat(threads.submit((java.util.concurrent.Callable<Boolean>) lock::tryLock).get()).isFalse();
        assertThatThrownBy(() -> {
            try {
                threads.submit(lock::unlock).get();
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause();
            }
        }).isInstanceOf(IllegalStateException.class).hasMessageContaining("You do not own lock at app:reentry");
        lock.unlock();
        lock.unlock();
        assertThat(fixture.lockInfo("app:reentry")).isEmpty();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aTimeToLiveIsALeaseAndRenewLockResetsIt() throws Exception {
        DistributedLock lock = first.obtain("leased");
        lock.lock(Duration.ofSeconds(5));
        assertThat(fixture.lockInfo("app:leased").get("watchdog")).isNull();
        assertThat((Long) fixture.lockInfo("app:leased").get("ttl")).isBetween(1L, 5_000L);
        first.renewLock("leased", Duration.ofSeconds(60));
        assertThat((Long) fixture.lockInfo("app:leased").get("ttl")).isGreaterThan(5_000L);
        assertThat(fixture.lockInfo("app:leased")).containsEntry("holds", 1L);
        assertThatThrownBy(() -> {
            try {
                threads.submit(() -> first.renewLock("leased")).get();
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause();
            }
        }).isInstanceOf(IllegalStateException.class).hasMessageContaining("Could not renew mutex at leased");
        lock.unlock();

        DistributedLock watched = first.obtain("watched");
        watched.lock();
        first.renewLock("watched");
        assertThat(fixture.lockInfo("app:watched").get("watchdog")).isNotNull();
        watched.unlock();
    }

    @Test
    void unusedLocksExpireFromTheCacheAndHeldOnesStay() throws Exception {
        Lock used = first.obtain("cached");
        used.lock();
        used.unlock();
        Lock held = first.obtain("held");
        held.lock();
        ServerFixture.eventually(5_000, "time passes", () -> {
            first.expireUnusedOlderThan(0);
            return first.obtain("cached") != used;
        });
        assertThat(first.obtain("held")).isSameAs(held);
        held.unlock();
    }

    @Test
    void badInputsAreRefusedAndChangeNothing() {
        assertThatThrownBy(() -> first.obtain(42)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must be a String");
        DistributedLock lock = first.obtain("bad");
        assertThatThrownBy(() -> lock.lock(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> lock.tryLock(Duration.ofSeconds(1), Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(fixture.lockInfo("app:bad")).isEmpty();
        assertThatThrownBy(() -> new RLockRegistry(fixture.connectionFactory, ""))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> first.setRenewalTaskScheduler(null)).isInstanceOf(IllegalArgumentException.class);
    }
}
