package io.rlock;

import io.rlock.internal.*;

import java.util.EventListener;

/**
 * What {@link RLock#addListener} takes (Redisson's {@code ObjectListener}): an
 * {@link ExpiredObjectListener} or a {@link DeletedObjectListener}.
 */
public interface ObjectListener extends EventListener {
}
