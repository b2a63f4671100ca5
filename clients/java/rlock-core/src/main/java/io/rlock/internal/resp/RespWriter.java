package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** Encodes commands as RESP arrays of bulk strings (what every server accepts). */
public final class RespWriter {
    private RespWriter() {
    }

    /**
     * One command: each argument is a {@code byte[]} (sent as is), a {@link CharSequence} (UTF-8)
     * or a {@link Number} (its decimal text).
     */
    public static byte[] encode(Object... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(32 + 16 * args.length);
        encodeTo(out, args);
        return out.toByteArray();
    }

    static void encodeTo(ByteArrayOutputStream out, Object... args) {
        if (args.length == 0) {
            throw new IllegalArgumentException("a command needs a name");
        }
        ascii(out, "*" + args.length + "\r\n");
        for (Object arg : args) {
            byte[] bytes = bytes(arg);
            ascii(out, "$" + bytes.length + "\r\n");
            out.write(bytes, 0, bytes.length);
            ascii(out, "\r\n");
        }
    }

    static byte[] bytes(Object arg) {
        if (arg instanceof byte[]) {
            return (byte[]) arg;
        }
        if (arg instanceof CharSequence) {
            return arg.toString().getBytes(StandardCharsets.UTF_8);
        }
        if (arg instanceof Long || arg instanceof Integer || arg instanceof Short || arg instanceof Byte) {
            return arg.toString().getBytes(StandardCharsets.US_ASCII);
        }
        throw new IllegalArgumentException("cannot send a " + (arg == null ? "null" : arg.getClass().getName()));
    }

    private static void ascii(ByteArrayOutputStream out, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.US_ASCII);
        out.write(bytes, 0, bytes.length);
    }

    /** Two encoded commands written together (so that no other caller's command comes between them). */
    static byte[] concat(byte[] a, byte[] b) {
        byte[] both = new byte[a.length + b.length];
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }
}
