package io.rlock.internal.transport;

/** An error reply: its code (the first word, e.g. {@code ERR}, {@code MOVED}) and its whole text. */
public final class RespError {
    private final String message;

    public RespError(String message) {
        this.message = message;
    }

    /** The first word of the error, e.g. {@code ERR}, {@code WRONGTYPE}, {@code MOVED}. */
    public String code() {
        int space = message.indexOf(' ');
        return space < 0 ? message : message.substring(0, space);
    }

    /** The whole error text as the server sent it. */
    public String message() {
        return message;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof RespError && ((RespError) other).message.equals(message);
    }

    @Override
    public int hashCode() {
        return message.hashCode();
    }

    @Override
    public String toString() {
        return message;
    }
}
