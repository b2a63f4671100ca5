package io.rlock;

import io.rlock.internal.*;

/**
 * The server could not be reached (also after the one retry on a new connection), or it
 * refused a call with an error (its text is the message; {@link #code()} its first word, e.g.
 * {@code WRONGTYPE} or {@code DEADLOCK}).
 */
public class RLockException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String code;

    public RLockException(String message, Throwable cause) {
        super(message, cause);
        this.code = null;
    }

    public RLockException(String code, String message) {
        super(message);
        this.code = code;
    }

    /** The server's error code ({@code ERR}, {@code WRONGTYPE}, {@code DEADLOCK}, ...), or null. */
    public String code() {
        return code;
    }
}
