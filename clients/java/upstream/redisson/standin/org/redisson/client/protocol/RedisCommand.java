package org.redisson.client.protocol;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import rlock.resp.RespError;

/** Stand-in for Redisson's {@code RedisCommand}: the command's words and how its reply is read. */
public class RedisCommand<R> {
    private final List<String> name;
    private final Function<Object, R> decoder;

    public RedisCommand(Function<Object, R> decoder, String... name) {
        this.name = List.of(name);
        this.decoder = decoder;
    }

    public List<String> getName() {
        return new ArrayList<>(name);
    }

    public R decode(Object reply) {
        if (reply instanceof RespError error) {
            throw new IllegalStateException(this + " answered " + error);
        }
        return decoder.apply(reply);
    }

    @Override
    public String toString() {
        return String.join(" ", name);
    }
}
