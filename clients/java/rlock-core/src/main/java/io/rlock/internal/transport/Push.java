package io.rlock.internal.transport;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;

/**
 * An out-of-band message: a RESP3 push ({@code >}), or a RESP2 subscriber's
 * {@code message}/{@code pmessage} array.
 */
public final class Push {
    private final List<Object> data;
    /** {@link #kind()}, read once (every NOTIFY message asks it several times). */
    private String kind;

    public Push(List<Object> data) {
        Object[] copy = data.toArray();
        for (int i = 0; i < copy.length; i++) {
            if (copy[i] == null) {
                copy[i] = new byte[0];
            }
        }
        this.data = java.util.Collections.unmodifiableList(java.util.Arrays.asList(copy));
    }

    /** The first element as text: {@code message}, {@code subscribe}, {@code invalidate}, ... */
    public String kind() {
        String known = kind;
        if (known == null) {
            kind = known = text(data.get(0));
        }
        return known;
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

    private static final Set<String> SUBSCRIPTION_KINDS =
            Set.of("subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe");
    private static final Set<String> MESSAGE_KINDS = Set.of("message", "pmessage", "smessage");

    /** Whether it answers a (un)subscribe call: a reply, not a message. */
    public boolean isSubscriptionReply() {
        return SUBSCRIPTION_KINDS.contains(kind());
    }

    /**
     * A reply read on a connection as the message it is: a push that is no subscription reply,
     * or (on a RESP2 {@code subscriber}) a {@code message} array; null for a reply to a call.
     */
    public static Push message(Object value, boolean subscriber) {
        if (value instanceof Push push) {
            return push.isSubscriptionReply() ? null : push;
        }
        if (subscriber && value instanceof List<?> list && !list.isEmpty() && MESSAGE_KINDS.contains(text(list.get(0)))) {
            @SuppressWarnings("unchecked")
            List<Object> data = (List<Object>) list;
            return new Push(data);
        }
        return null;
    }

    public static String text(Object value) {
        return value instanceof byte[] ? new String((byte[]) value, StandardCharsets.UTF_8) : String.valueOf(value);
    }

    @Override
    public String toString() {
        return "Push" + data.stream().map(Push::text).toList();
    }
}
