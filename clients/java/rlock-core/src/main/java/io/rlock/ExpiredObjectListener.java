package io.rlock;

import io.rlock.internal.*;

/**
 * Told when the object's key expired (Redisson's {@code ExpiredObjectListener}): Redis's
 * {@code expired} keyspace event, which the server publishes when {@code notify-keyspace-events}
 * holds {@code E} and {@code x}. A lock's key expires when its lease ends.
 */
@FunctionalInterface
public interface ExpiredObjectListener extends ObjectListener {
    void onExpired(String name);
}
