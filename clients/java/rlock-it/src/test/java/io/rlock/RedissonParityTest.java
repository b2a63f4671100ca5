package io.rlock;

import io.rlock.testing.TestClients;
import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What Redisson's own test classes checked (RedissonCountDownLatchTest, RedissonSemaphoreTest,
 * RedissonPermitExpirableSemaphoreTest, RedissonFairLockTest, RedissonLockTest) that no other
 * test of ours did: each method names the Redisson tests it stands for (clients/java/COVERAGE.md
 * maps all of them).
 */
class RedissonParityTest extends TwoClients {
    RedissonParityTest() {
        super("parity");
    }

    /** RedissonCountDownLatchTest: testTrySetCount, testCount, testDelete, testDeleteFailed, testCountDown, testAwaitTimeout. */
    @Test
    void aLatchIsSetOnceCountsDownAndIsDeleted() throws Exception {
        RCountDownLatch latch = client.getCountDownLatch(name);
        assertThat(latch.isExists()).isFalse();
        assertThat(latch.getCount()).isZero();
        assertThat(latch.delete()).as("nothing to delete").isFalse();
        assertThat(latch.trySetCount(2)).isTrue();
        assertThat(latch.trySetCount(5)).as("set already").isFalse();
        assertThat(latch.getCount()).isEqualTo(2);
        assertThat(latch.await(50, TimeUnit.MILLISECONDS)).isFalse();
        CompletableFuture<Void> waiting = other.getCountDownLatch(name).awaitAsync();
        latch.countDown();
        assertThat(other.getCountDownLatch(name).getCountAsync().get(5, TimeUnit.SECONDS)).isEqualTo(1);
        assertThat(waiting).isNotDone();
        latch.countDownAsync().get(5, TimeUnit.SECONDS);
        waiting.get(5, TimeUnit.SECONDS);
        assertThat(latch.getCount()).isZero();
        assertThat(latch.trySetCountAsync(1).get(5, TimeUnit.SECONDS)).as("a latch at 0 is gone: set anew").isTrue();
        assertThat(latch.delete()).isTrue();
        assertThat(latch.isExists()).isFalse();
        assertThat(latch.await(1, TimeUnit.SECONDS)).as("no latch: open").isTrue();
    }

    /**
     * RedissonSemaphoreTest: testTrySetPermits (without its exact-boundary expiry), testZero,
     * testAcquireWithoutSetPermits, testReducePermits, testTryNAcquire, testDrainPermits,
     * testReleaseIfExists, testReleaseWithoutPermits, testReleaseAcquire.
     */
    @Test
    void aCountingSemaphoreIsSetDrainedReducedAndReleasedOnlyIfItExists() throws Exception {
        RSemaphore semaphore = client.getSemaphore(name);
        assertThat(semaphore.releaseIfExists(1)).isFalse();
        assertThat(semaphore.isExists()).isFalse();
        assertThat(semaphore.tryAcquire()).as("no permits yet").isFalse();
        semaphore.release(2);
        assertThat(semaphore.tryAcquire(2)).as("released without being set: permits all the same").isTrue();
        assertThat(semaphore.delete()).isTrue();
        assertThat(semaphore.trySetPermits(10)).isTrue();
        assertThat(semaphore.trySetPermits(1)).as("set already").isFalse();
        assertThat(semaphore.tryAcquire(11)).isFalse();
        assertThat(semaphore.availablePermits()).as("a refused request takes nothing").isEqualTo(10);
        assertThat(other.getSemaphore(name).tryAcquire(3)).isTrue();
        assertThat(semaphore.availablePermits()).isEqualTo(7);
        semaphore.addPermits(-5);
        assertThat(semaphore.availablePermits()).isEqualTo(2);
        assertThat(semaphore.drainPermits()).isEqualTo(2);
        assertThat(semaphore.availablePermits()).isZero();
        assertThat(semaphore.tryAcquire()).isFalse();
        assertThat(semaphore.releaseIfExists(4)).isTrue();
        assertThat(semaphore.availablePermits()).isEqualTo(4);
        semaphore.release();
        assertThat(semaphore.availablePermits()).as("a release adds a permit, as Redisson's").isEqualTo(5);
    }

    /**
     * RedissonPermitExpirableSemaphoreTest: testSetPermits, testGetPermits, testAcquiredPermits,
     * testAvailablePermits, testNotExistent, testReleaseExpired, testTryReleaseManyExpired,
     * testReleaseManyNotExistOrExpired, testGetLeaseTime, testAcquireAsyncMany, testReleaseAsyncMany.
     */
    @Test
    void permitIdsAreCountedAndAnExpiredOneIsNoLongerReleased() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        assertThat(semaphore.tryAcquire()).as("no permits yet").isNull();
        semaphore.setPermits(3);
        assertThat(semaphore.getPermits()).isEqualTo(3);
        String kept = semaphore.tryAcquire();
        assertThat(kept).isNotNull();
        assertThat(semaphore.getLeaseTime(kept)).as("no lease: the watchdog's").isEqualTo(-1);
        assertThat(semaphore.acquiredPermits()).isEqualTo(1);
        assertThat(semaphore.availablePermits()).isEqualTo(2);
        String leased = semaphore.acquire(300, TimeUnit.MILLISECONDS);
        assertThat(semaphore.getLeaseTime(leased)).isBetween(1L, 300L);
        eventually(10_000, "the 300 ms lease ends", () -> semaphore.acquiredPermits() == 1);
        assertThat(semaphore.tryRelease(leased)).isFalse();
        assertThatThrownBy(() -> semaphore.release(leased)).isInstanceOf(RLockException.class);
        assertThat(semaphore.tryRelease(List.of(leased, "never-granted"))).isZero();
        List<String> two = semaphore.acquireAsync(2).get(5, TimeUnit.SECONDS);
        assertThat(two).hasSize(2);
        assertThat(semaphore.availablePermits()).isZero();
        semaphore.releaseAsync(two).get(5, TimeUnit.SECONDS);
        semaphore.release(kept);
        assertThat(semaphore.availablePermits()).isEqualTo(3);
        assertThat(semaphore.acquiredPermits()).isZero();
    }

    /**
     * RedissonFairLockTest: testConcurrency_MultiInstance_Ordering, testUnlockFail (a fair lock's
     * unlock of a free lock is silent, a plain lock's is not: RedissonLockTest.testUnlockFail).
     */
    @Test
    void aFairLockGrantsWaitersInTheOrderTheyCame() throws Exception {
        RLock fair = client.getFairLock(name);
        fair.lock();
        List<Integer> granted = new CopyOnWriteArrayList<>();
        List<CompletableFuture<Void>> waiters = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int index = i;
            RLockClient waiterClient = i % 2 == 0 ? other : client;
            waiters.add(Async.run(() -> {
                RLock lock = waiterClient.getFairLock(name);
                lock.lock();
                granted.add(index);
                lock.unlock();
            }));
            int queued = i + 1;
            eventually(10_000, "waiter " + i + " queued", () -> Admin.waiters(admin, name) == queued);
        }
        fair.unlock();
        for (CompletableFuture<Void> waiter : waiters) {
            waiter.get(10, TimeUnit.SECONDS);
        }
        assertThat(granted).containsExactly(0, 1, 2);
        fair.unlock(); // free: silent, as Redisson's fair lock
        assertThatThrownBy(() -> client.getLock(name).unlock()).isInstanceOf(IllegalMonitorStateException.class);
    }

    /**
     * RedissonLockTest / RedissonFairLockTest: testIsLockedOtherThread,
     * testIsHeldByCurrentThreadOtherThread, testGetHoldCount, testRemainTimeToLive; and the async
     * forms (lockAsync, tryLockAsync, unlockAsync, isLockedAsync, remainTimeToLiveAsync).
     */
    @Test
    void anotherThreadSeesTheLockHeldButNotByItAndTheAsyncFormsActForTheCaller() throws Exception {
        RLock lock = client.getLock(name);
        assertThat(lock.remainTimeToLive()).as("no key").isEqualTo(-2);
        lock.lockAsync(10, TimeUnit.SECONDS).get(5, TimeUnit.SECONDS);
        assertThat(lock.isHeldByCurrentThread()).as("lockAsync acts for the calling thread").isTrue();
        assertThat(lock.remainTimeToLiveAsync().get(5, TimeUnit.SECONDS)).isBetween(1L, 10_000L);
        CompletableFuture<Object[]> seen = Async.call(() -> new Object[] {lock.isLocked(), lock.isHeldByCurrentThread(),
                lock.getHoldCount(), lock.tryLock()});
        assertThat(seen.get(5, TimeUnit.SECONDS)).containsExactly(true, false, 0, false);
        assertThat(other.getLock(name).tryLockAsync().get(5, TimeUnit.SECONDS)).isFalse();
        assertThat(lock.tryLockAsync().get(5, TimeUnit.SECONDS)).as("re-entered by the caller").isTrue();
        assertThat(lock.getHoldCount()).isEqualTo(2);
        lock.unlockAsync().get(5, TimeUnit.SECONDS);
        lock.unlockAsync().get(5, TimeUnit.SECONDS);
        assertThat(lock.isLockedAsync().get(5, TimeUnit.SECONDS)).isFalse();
    }

    /**
     * RedissonReadWriteLockTest: testReadLockLeaseTimeoutDiffThreadsRRW, testReadLockExpiration,
     * testReadWriteTTL, testWR (a reader's hold ends at its own lease; a writer waits for the last).
     */
    @Test
    void eachReadHoldEndsAtItsOwnLeaseAndAWriterWaitsForTheLast() throws Exception {
        RReadWriteLock rw = client.getReadWriteLock(name);
        assertThat(rw.readLock().tryLock(0, 300, TimeUnit.MILLISECONDS)).isTrue();
        assertThat(Async.call(() -> rw.readLock().tryLock(0, 10, TimeUnit.SECONDS)).get(5, TimeUnit.SECONDS)).isTrue();
        RLock writer = other.getReadWriteLock(name).writeLock();
        assertThat(writer.tryLock()).isFalse();
        eventually(10_000, "the 300 ms read hold ends", () -> !rw.readLock().isHeldByCurrentThread());
        assertThat(rw.readLock().isLocked()).as("the other reader's hold stays").isTrue();
        assertThat(writer.tryLock()).isFalse();
        assertThat(rw.readLock().remainTimeToLive()).as("the longest lease left").isGreaterThan(1000);
        rw.readLock().forceUnlock();
        assertThat(writer.tryLock(5, 1, TimeUnit.SECONDS)).isTrue();
    }

    /** RedissonLockTest.testRedisFailed: a call to a server that is gone throws RLockException, it does not hang. */
    @Test
    void aCallToAServerThatIsGoneThrows() throws Exception {
        io.rlock.testing.RedisServer doomed = io.rlock.testing.RedisServer.start();
        try (RLockClient client = TestClients.create(doomed.uri(), new RLockOptions().connectTimeout(java.time.Duration.ofSeconds(1)))) {
            RLock lock = client.getLock(name);
            doomed.close();
            assertThatThrownBy(lock::lock).isInstanceOf(RLockException.class);
        } finally {
            doomed.close();
        }
    }
}
