package org.redisson.client;

/**
 * Stand-in for Redisson's {@code RedisTimeoutException}, which rlock's client never throws (a
 * reply that does not come in time is an {@code RLockException}): a vendored test that forgives
 * it forgives nothing here.
 */
public class RedisTimeoutException extends RuntimeException {
    public RedisTimeoutException(String message) {
        super(message);
    }
}
