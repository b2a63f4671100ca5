package io.rlock;

import io.rlock.internal.*;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Redisson's {@code RSemaphore}: a count of permits that belong to nobody once taken
 * ({@code RCSEM.*}, docs/counting.md). Any thread or process releases, and releasing more than
 * was acquired adds permits, so it signals between threads and processes; a crashed client's
 * permits are not given back (use {@link RLockClient#getPermitExpirableSemaphore} or
 * {@link RLockClient#getOwnedSemaphore} for permits that come back). Waiting threads queue FIFO
 * in the server: a request for 3 is not passed by later requests for 1.
 */
public interface RSemaphore {
    String getName();

    /** Sets the permits if the semaphore does not exist yet; true when it set them. */
    boolean trySetPermits(int permits);

    /** As {@link #trySetPermits(int)}, the key expiring after {@code timeToLive} when it set them. */
    boolean trySetPermits(int permits, Duration timeToLive);

    /** Adds permits (negative: removes; the count may go below 0), serving waiters. */
    void addPermits(int permits);

    /** The available permits (0 when never set; below 0 after removals). */
    int availablePermits();

    /** Takes every available permit: how many (0 when none; negative counts are reset to 0 and returned). */
    int drainPermits();

    void acquire() throws InterruptedException;

    /** Waits for {@code permits} (0: at once, no call). */
    void acquire(int permits) throws InterruptedException;

    boolean tryAcquire();

    boolean tryAcquire(int permits);

    boolean tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException;

    boolean tryAcquire(Duration waitTime) throws InterruptedException;

    boolean tryAcquire(int permits, long waitTime, TimeUnit unit) throws InterruptedException;

    boolean tryAcquire(int permits, Duration waitTime) throws InterruptedException;

    void release();

    /** Adds {@code permits} (0: nothing, no call), whoever acquired them. */
    void release(int permits);

    /**
     * Releases {@code permits} only when the semaphore exists (was set, or has permits): true when
     * it released. Not atomic with a concurrent {@link #delete()}.
     */
    boolean releaseIfExists(int permits);

    /** Removes the semaphore (its count); true when it existed. */
    boolean delete();

    boolean isExists();

    /** Sets the key's time to live; true when it exists. */
    boolean expire(Duration timeToLive);
}
