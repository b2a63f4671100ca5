package io.rlock;

import io.rlock.internal.*;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Permits with an id each, released by id from any thread (Redisson's
 * {@code RPermitExpirableSemaphore}). Without a lease time a permit lasts until released or
 * until this client's connection dies; with one, it also ends at its lease.
 */
public interface RPermitExpirableSemaphore {
    String getName();

    boolean trySetPermits(int permits);

    void addPermits(int permits);

    int availablePermits();

    /** Waits for a permit; its id. */
    String acquire() throws InterruptedException;

    String acquire(long leaseTime, TimeUnit unit) throws InterruptedException;

    /**
     * Waits for {@code permits} permits, taken all at once (one request in the server's FIFO
     * queue, served when all fit): their ids.
     */
    List<String> acquire(int permits) throws InterruptedException;

    List<String> acquire(int permits, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** One attempt: a permit id, or null. */
    String tryAcquire();

    String tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException;

    String tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** One attempt at {@code permits} permits, all or none: their ids, or an empty list. */
    List<String> tryAcquire(int permits);

    /**
     * {@code leaseTime} -1: no lease (held until released or the client's connection dies). No
     * {@code tryAcquire(int permits, long waitTime, TimeUnit)}, as in Redisson: a call
     * {@code tryAcquire(200, 1000, MILLISECONDS)} means wait 200, lease 1000.
     */
    List<String> tryAcquire(int permits, long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** True when the permit was held and is now released. */
    boolean tryRelease(String permitId);

    /** @throws RLockException when the permit is not held (released, expired, unknown), as Redisson's RedisException */
    void release(String permitId);

    /**
     * Gives back those of {@code permitIds} still held: how many.
     *
     * @throws IllegalArgumentException when the list is null or empty, as Redisson's
     */
    int tryRelease(List<String> permitIds);

    /**
     * Gives back every one of {@code permitIds}, or none: when one is not held (released,
     * expired, unknown, or listed twice) {@link RLockException} and nothing changes.
     *
     * @throws IllegalArgumentException when the list is null or empty, as Redisson's
     */
    void release(List<String> permitIds);

    /** Sets a held permit's lease anew; false when it is not held. */
    boolean updateLeaseTime(String permitId, long leaseTime, TimeUnit unit);

    /** The permits held now (by any id). */
    int acquiredPermits();

    /** The permits in all: available plus held. */
    int getPermits();

    /**
     * Sets the permits in all to {@code permits} (available ones are added or removed: held
     * ones stay held, so the available count may go below 0). Not atomic with other changes.
     */
    void setPermits(int permits);

    /**
     * The ms left of {@code permitId}'s lease: -1 when it has none (held by the watchdog).
     *
     * @throws RLockException when no such permit is held
     */
    long getLeaseTime(String permitId);

    /**
     * Sets the time to live of the semaphore, its count and its holders alike (as Redisson's,
     * which sets it on its timeout set too): true when it exists.
     */
    boolean expire(Duration timeToLive);

    /** {@link #acquire()} on another thread (the permit id belongs to no thread). */
    CompletableFuture<String> acquireAsync();

    CompletableFuture<String> acquireAsync(long leaseTime, TimeUnit unit);

    CompletableFuture<List<String>> acquireAsync(int permits);

    CompletableFuture<List<String>> acquireAsync(int permits, long leaseTime, TimeUnit unit);

    CompletableFuture<String> tryAcquireAsync();

    CompletableFuture<List<String>> tryAcquireAsync(int permits);

    CompletableFuture<String> tryAcquireAsync(long waitTime, TimeUnit unit);

    CompletableFuture<String> tryAcquireAsync(long waitTime, long leaseTime, TimeUnit unit);

    CompletableFuture<List<String>> tryAcquireAsync(int permits, long waitTime, long leaseTime, TimeUnit unit);

    CompletableFuture<Boolean> tryReleaseAsync(String permitId);

    CompletableFuture<Integer> tryReleaseAsync(List<String> permitIds);

    CompletableFuture<Void> releaseAsync(String permitId);

    CompletableFuture<Void> releaseAsync(List<String> permitIds);
}
