package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads RESP2 and RESP3 values from a stream, one whole value per {@link #read()}.
 *
 * <p>What each type becomes:
 * <ul>
 *   <li>simple string {@code +}: {@link String}; verbatim string {@code =}: its text, without
 *       the format prefix, as a {@link String}</li>
 *   <li>bulk string {@code $}: {@code byte[]} (binary-safe)</li>
 *   <li>integer {@code :}: {@link Long}; double {@code ,}: {@link Double}; big number
 *       {@code (}: {@link BigInteger}; boolean {@code #}: {@link Boolean}</li>
 *   <li>null {@code _}, and RESP2's {@code $-1} and {@code *-1}: {@code null}</li>
 *   <li>error {@code -} and blob error {@code !}: {@link RespError} (returned, not thrown, so
 *       that errors inside arrays, as {@code EXEC} replies them, keep their place)</li>
 *   <li>array {@code *}: {@link List}; set {@code ~}: {@link Set}; map {@code %}: {@link Map}
 *       in reply order, whose string keys (simple or bulk) are decoded as UTF-8 {@link String}s
 *       so that they can be looked up</li>
 *   <li>push {@code >}: {@link Push}</li>
 *   <li>attribute {@code |}: read and dropped; the value that follows it is returned</li>
 * </ul>
 *
 * <p>Malformed input raises {@link RespProtocolException}; the end of the stream raises
 * {@link EOFException}. Nesting deeper than {@value #MAX_DEPTH} and lengths beyond
 * {@link #maxLength} are refused as malformed.
 */
public final class RespReader {
    static final int MAX_DEPTH = 64;

    private final InputStream in;
    private final long maxLength;
    private final byte[] buffer = new byte[16 * 1024];
    private int position;
    private int limit;

    public RespReader(InputStream in) {
        this(in, 512L * 1024 * 1024);
    }

    /** @param maxLength the longest bulk string and the most elements of an aggregate accepted */
    public RespReader(InputStream in, long maxLength) {
        this.in = in;
        this.maxLength = maxLength;
    }

    /** The next whole value. */
    public Object read() throws IOException {
        return read(0);
    }

    private Object read(int depth) throws IOException {
        if (depth > MAX_DEPTH) {
            throw new RespProtocolException("values nested deeper than " + MAX_DEPTH);
        }
        int type = readByte();
        switch (type) {
            case '+':
                return line();
            case '-':
                return new RespError(line());
            case ':':
                return integer(line());
            case '$': {
                long length = length(line(), true);
                return length < 0 ? null : bulk(length);
            }
            case '!': {
                long length = length(line(), false);
                return new RespError(new String(bulk(length), StandardCharsets.UTF_8));
            }
            case '=': {
                long length = length(line(), false);
                String text = new String(bulk(length), StandardCharsets.UTF_8);
                if (text.length() < 4 || text.charAt(3) != ':') {
                    throw new RespProtocolException("verbatim string without its format: " + text);
                }
                return text.substring(4);
            }
            case '*': {
                long count = length(line(), true);
                return count < 0 ? null : elements(count, depth, new ArrayList<>((int) Math.min(count, 1024)));
            }
            case '~':
                return elements(length(line(), false), depth, new LinkedHashSet<>());
            case '>': {
                List<Object> data = elements(length(line(), false), depth, new ArrayList<>());
                if (data.isEmpty()) {
                    throw new RespProtocolException("empty push");
                }
                return new Push(data);
            }
            case '%': {
                long count = length(line(), false);
                Map<Object, Object> map = new LinkedHashMap<>();
                for (long i = 0; i < count; i++) {
                    Object key = read(depth + 1);
                    if (key instanceof byte[]) {
                        key = new String((byte[]) key, StandardCharsets.UTF_8);
                    }
                    map.put(key, read(depth + 1));
                }
                return map;
            }
            case '|': {
                long count = length(line(), false);
                for (long i = 0; i < 2 * count; i++) {
                    read(depth + 1);
                }
                return read(depth);
            }
            case '_':
                if (!line().isEmpty()) {
                    throw new RespProtocolException("null with a payload");
                }
                return null;
            case '#': {
                String value = line();
                if (value.equals("t")) {
                    return Boolean.TRUE;
                }
                if (value.equals("f")) {
                    return Boolean.FALSE;
                }
                throw new RespProtocolException("not a boolean: " + value);
            }
            case ',':
                return real(line());
            case '(':
                try {
                    return new BigInteger(line());
                } catch (NumberFormatException e) {
                    throw new RespProtocolException("not a big number");
                }
            default:
                throw new RespProtocolException("unknown type byte " + describe(type));
        }
    }

    private <C extends java.util.Collection<Object>> C elements(long count, int depth, C into)
            throws IOException {
        for (long i = 0; i < count; i++) {
            into.add(read(depth + 1));
        }
        return into;
    }

    private static long integer(String text) throws RespProtocolException {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new RespProtocolException("not an integer: " + text);
        }
    }

    private static Double real(String text) throws RespProtocolException {
        switch (text) {
            case "inf":
                return Double.POSITIVE_INFINITY;
            case "-inf":
                return Double.NEGATIVE_INFINITY;
            case "nan":
                return Double.NaN;
            default:
                try {
                    return Double.parseDouble(text);
                } catch (NumberFormatException e) {
                    throw new RespProtocolException("not a double: " + text);
                }
        }
    }

    private long length(String text, boolean nullable) throws RespProtocolException {
        long length = integer(text);
        if (length == -1 && nullable) {
            return -1;
        }
        if (length < 0 || length > maxLength) {
            throw new RespProtocolException("bad length " + text);
        }
        return length;
    }

    private byte[] bulk(long length) throws IOException {
        byte[] data = new byte[(int) length];
        int filled = 0;
        while (filled < data.length) {
            if (position == limit) {
                fill();
            }
            int n = Math.min(limit - position, data.length - filled);
            System.arraycopy(buffer, position, data, filled, n);
            position += n;
            filled += n;
        }
        if (readByte() != '\r' || readByte() != '\n') {
            throw new RespProtocolException("bulk string not followed by CRLF");
        }
        return data;
    }

    /** The rest of the line, without its CRLF (a bare CR or LF inside is malformed). */
    private String line() throws IOException {
        StringBuilder text = new StringBuilder();
        while (true) {
            int b = readByte();
            if (b == '\r') {
                if (readByte() != '\n') {
                    throw new RespProtocolException("CR not followed by LF");
                }
                return text.toString();
            }
            if (b == '\n') {
                throw new RespProtocolException("LF without CR");
            }
            if (text.length() >= 64 * 1024) {
                throw new RespProtocolException("line longer than 64 KiB");
            }
            text.append((char) b);
        }
    }

    private int readByte() throws IOException {
        if (position == limit) {
            fill();
        }
        return buffer[position++] & 0xff;
    }

    private void fill() throws IOException {
        int n = in.read(buffer, 0, buffer.length);
        if (n < 0) {
            throw new EOFException("connection closed by the server");
        }
        position = 0;
        limit = n;
    }

    private static String describe(int b) {
        return b >= 32 && b < 127 ? "'" + (char) b + "'" : String.format("0x%02x", b);
    }
}
