package io.rlock;

import io.rlock.internal.*;

/**
 * Told when the object's key was deleted (Redisson's {@code DeletedObjectListener}): the
 * {@code del} keyspace event, which the server publishes when {@code notify-keyspace-events}
 * holds {@code E} and {@code g}. A lock's key is deleted by its last release.
 */
@FunctionalInterface
public interface DeletedObjectListener extends ObjectListener {
    void onDeleted(String name);
}
