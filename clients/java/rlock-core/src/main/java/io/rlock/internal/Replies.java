package io.rlock.internal;

import io.rlock.*;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import io.rlock.internal.transport.RespError;

/** Reading replies the same way whether they came as RESP3 maps or RESP2 flat arrays. */
public final class Replies {
    private Replies() {
    }

    /** A map reply (RESP3) or a flat field/value array (RESP2) as a map; null for nil. */
    public static Map<String, Object> map(Object reply) {
        if (reply == null) {
            return null;
        }
        check(reply);
        Map<String, Object> map = new LinkedHashMap<>();
        if (reply instanceof Map) {
            ((Map<?, ?>) reply).forEach((k, v) -> map.put(Replies.text(k), v));
            return map;
        }
        if (reply instanceof List) {
            List<?> list = (List<?>) reply;
            for (int i = 0; i + 1 < list.size(); i += 2) {
                map.put(Replies.text(list.get(i)), list.get(i + 1));
            }
            return map;
        }
        throw new RLockException("ERR", "unexpected reply " + Replies.text(reply));
    }

    /** A bulk or status reply as text (UTF-8). */
    public static String text(Object value) {
        return io.rlock.internal.transport.Push.text(value);
    }

    public static long number(Object value, long otherwise) {
        if (value instanceof Long) {
            return (Long) value;
        }
        if (value == null) {
            return otherwise;
        }
        try {
            return Long.parseLong(Replies.text(value));
        } catch (NumberFormatException e) {
            return otherwise;
        }
    }

    /** Raises the server's error as an {@link RLockException} ({@link DeadlockException} for {@code DEADLOCK}). */
    public static Object check(Object reply) {
        if (reply instanceof RespError) {
            RespError error = (RespError) reply;
            if ("DEADLOCK".equals(error.code())) {
                throw new DeadlockException(error.message());
            }
            if ("CROSSSLOT".equals(error.code())) {
                throw new RLockException(error.code(), error.message() + ": in Redis Cluster, put the keys in one hash slot"
                        + " with a hash tag, e.g. {order}:1 {order}:2");
            }
            throw new RLockException(error.code(), error.message());
        }
        return reply;
    }
}
