package io.rlock;

import io.rlock.internal.*;

/**
 * The server refused a wait because it would close a cycle of owners ({@code -DEADLOCK}): this
 * thread holds a lock another owner waits for, directly or through others. Nothing was queued;
 * back off, release what this thread holds, and retry. The message is the server's, naming the
 * owners and keys of the cycle.
 */
public class DeadlockException extends RLockException {
    private static final long serialVersionUID = 1L;

    public DeadlockException(String message) {
        super("DEADLOCK", message);
    }
}
