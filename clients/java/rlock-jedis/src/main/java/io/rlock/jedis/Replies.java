package io.rlock.jedis;

import io.rlock.internal.transport.RespError;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * A reply as Jedis's protocol reader hands it over (RESP2: {@code byte[]} for statuses and bulk
 * strings, {@code Long}, {@code List}, and a {@link JedisDataException} for an error, thrown at
 * the top and kept in place inside an array) in the engine's value model
 * ({@link io.rlock.internal.transport.Connection}): text as {@code String} (rlock's keys, owners
 * and replies are UTF-8 text), an error as a {@link RespError} value, so that a pipeline's other
 * replies stand.
 */
final class Replies {
    private Replies() {
    }

    static Object of(Object reply) {
        if (reply instanceof byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
        if (reply instanceof JedisDataException error) {
            return new RespError(error.getMessage());
        }
        if (reply instanceof List<?> list) {
            List<Object> converted = new ArrayList<>(list.size());
            for (Object element : list) {
                converted.add(of(element));
            }
            return converted;
        }
        return reply;
    }
}
