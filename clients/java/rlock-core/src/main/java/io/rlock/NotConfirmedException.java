package io.rlock;

import io.rlock.internal.*;

/**
 * Fewer replicas than required acknowledged a write within the confirmation timeout
 * ({@link Confirm}). An acquisition was undone (released) and is not held; a release or
 * count-down stands on the primary but may be lost if it fails over now. Code {@code NOTCONFIRMED}.
 */
public class NotConfirmedException extends RLockException {
    private static final long serialVersionUID = 1L;
    private final int confirmed;
    private final int required;
    private final long timeoutMs;

    public NotConfirmedException(String message, int confirmed, int required, long timeoutMs) {
        super("NOTCONFIRMED", message);
        this.confirmed = confirmed;
        this.required = required;
        this.timeoutMs = timeoutMs;
    }

    /** How many replicas confirmed in time. */
    public int confirmed() {
        return confirmed;
    }

    /** How many were required. */
    public int required() {
        return required;
    }

    public long timeoutMillis() {
        return timeoutMs;
    }
}
