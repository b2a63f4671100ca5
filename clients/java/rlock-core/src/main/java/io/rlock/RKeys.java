package io.rlock;

import io.rlock.internal.*;

/**
 * The keys of the client's database (Redisson's {@code RKeys}, reduced to what rlock's users
 * and Redisson's tests need): on every primary, so in Redis Cluster across all its masters.
 */
public interface RKeys {
    /** The number of keys in the database ({@code DBSIZE}), summed over the primaries. */
    long count();

    /** Removes every key of every database ({@code FLUSHALL}) on every primary. */
    void flushall();
}
