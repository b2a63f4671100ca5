package io.rlock.internal;

import io.rlock.*;

/** How a wait ended, as its message (or its connection) said. */
public final class Event {
    enum Kind { GRANTED, TIMEOUT, FAILED, DISCONNECTED, CLOSED }

    static final Event TIMEOUT = new Event(Kind.TIMEOUT, -1, null);
    static final Event DISCONNECTED = new Event(Kind.DISCONNECTED, -1, null);
    static final Event CLOSED = new Event(Kind.CLOSED, -1, null);

    final Kind kind;
    final long token;
    final String code;
    /**
     * A grant's: the replies to its {@link Waiter#confirmation}, written as its message was read
     * (null: none came, the waiting thread confirms it).
     */
    final java.util.List<Object> confirmation;

    private Event(Kind kind, long token, String code) {
        this(kind, token, code, null);
    }

    private Event(Kind kind, long token, String code, java.util.List<Object> confirmation) {
        this.kind = kind;
        this.token = token;
        this.code = code;
        this.confirmation = confirmation;
    }

    /** This grant with the replies to its confirmation. */
    Event confirmedBy(java.util.List<Object> replies) {
        return new Event(kind, token, code, replies);
    }

    static Event granted(long token) {
        return new Event(Kind.GRANTED, token, null);
    }

    static Event failed(String code) {
        return new Event(Kind.FAILED, -1, code);
    }

    @Override
    public String toString() {
        return kind + (kind == Kind.GRANTED ? " " + token : "") + (code != null ? " " + code : "");
    }
}
