package io.rlock.internal;

import io.rlock.NotConfirmedException;

/** A write carried out but not confirmed in time (internal: the caller undoes it and reports). */
public final class Unconfirmed extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int confirmed;
    final int required;
    final long timeoutMs;
    /** The write's reply (the tokens of an acquisition, to undo it). */
    public Object reply;
    /** The node that carried it out. */
    public Node node;

    public Unconfirmed(int confirmed, int required, long timeoutMs) {
        super("confirmed by " + confirmed + " of " + required + " replicas within " + timeoutMs + " ms", null, false, false);
        this.confirmed = confirmed;
        this.required = required;
        this.timeoutMs = timeoutMs;
    }

    public NotConfirmedException report(String what, boolean undone) {
        return new NotConfirmedException(what + ": " + getMessage() + (undone
                ? " (undone: not held)" : " (it stands on the primary, but a failover now may lose it)"),
                confirmed, required, timeoutMs);
    }
}
