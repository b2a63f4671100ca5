package rlock;

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

    /** One attempt: a permit id, or null. */
    String tryAcquire();

    String tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException;

    String tryAcquire(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException;

    /** True when the permit was held and is now released. */
    boolean tryRelease(String permitId);

    /** @throws IllegalArgumentException when the permit is not held (released, expired, unknown) */
    void release(String permitId);

    /** Sets a held permit's lease anew; false when it is not held. */
    boolean updateLeaseTime(String permitId, long leaseTime, TimeUnit unit);
}
