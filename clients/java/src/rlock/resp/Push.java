package rlock.resp;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * An out-of-band message: a RESP3 push ({@code >}), or a RESP2 subscriber's
 * {@code message}/{@code pmessage} array.
 */
public final class Push {
    private final List<Object> data;

    public Push(List<Object> data) {
        this.data = List.copyOf(data.stream().map(x -> x == null ? new byte[0] : x).toList());
    }

    /** The first element as text: {@code message}, {@code subscribe}, {@code invalidate}, ... */
    public String kind() {
        return text(data.get(0));
    }

    /** Every element, the kind first. */
    public List<Object> data() {
        return data;
    }

    /** The payload of a {@code message} push (its last element), or null for other kinds. */
    public byte[] payload() {
        if (!kind().equals("message") && !kind().equals("pmessage") && !kind().equals("smessage")) {
            return null;
        }
        Object last = data.get(data.size() - 1);
        return last instanceof byte[] ? (byte[]) last : String.valueOf(last).getBytes(StandardCharsets.UTF_8);
    }

    static String text(Object value) {
        return value instanceof byte[] ? new String((byte[]) value, StandardCharsets.UTF_8) : String.valueOf(value);
    }

    @Override
    public String toString() {
        return "Push" + data.stream().map(Push::text).toList();
    }
}
