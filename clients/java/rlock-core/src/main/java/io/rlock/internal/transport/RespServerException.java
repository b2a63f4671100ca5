package io.rlock.internal.transport;

import java.io.IOException;

/** The server refused a step of setting up a connection (AUTH, HELLO, SELECT, SUBSCRIBE). */
public final class RespServerException extends IOException {
    private final transient Object reply;

    public RespServerException(String step, Object reply) {
        super(step + " refused: " + Push.text(reply));
        this.reply = reply;
    }

    /** What the server replied (usually a {@link RespError}). */
    public Object reply() {
        return reply;
    }
}
