package io.rlock;

import io.rlock.internal.*;

import java.util.concurrent.locks.ReadWriteLock;

/**
 * Many readers or one writer (Redisson's {@code RReadWriteLock}). A writer may take the read
 * lock too and then release its write lock (downgrade); a reader asking for the write lock is
 * refused at once with {@link RLockException} (an upgrade could only wait for itself). Queued
 * writers keep later readers out, so readers cannot starve writers.
 */
public interface RReadWriteLock extends ReadWriteLock {
    String getName();

    @Override
    RLock readLock();

    @Override
    RLock writeLock();
}
