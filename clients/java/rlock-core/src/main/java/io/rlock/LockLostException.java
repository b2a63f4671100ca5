package io.rlock;

import io.rlock.internal.*;

/**
 * The calling thread no longer holds the lock it acted under: a guarded write
 * ({@link RLock#guard(String...)}) was refused with {@code NOTOWNER} and nothing ran. The lock
 * has another holder, none, or a new token (a lease end, a lost watchdog connection,
 * {@code forceUnlock}). The message is the server's.
 */
public class LockLostException extends IllegalMonitorStateException {
    private static final long serialVersionUID = 1L;

    public LockLostException(String message) {
        super(message);
    }
}
