package io.rlock;

import io.rlock.internal.*;

/**
 * Told when this client learns that a holding ended without its owner's release: its watchdog
 * connection dropped and the re-bind from a new connection found it gone, or the server said
 * so (lease end, {@code MAXHOLD}, {@code forceUnlock}, {@code DEL}). Called on the client's
 * own maintenance thread; keep it short.
 */
@FunctionalInterface
public interface LockLostListener {
    void lockLost(LostLock lost);
}
