package org.redisson.client;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.redisson.client.protocol.RedisCommand;
import rlock.resp.RespConnection;

/** Stand-in for Redisson's {@code RedisConnection}: one command at a time, its reply decoded as the command says. */
public class RedisConnection {
    private final RespConnection connection;

    RedisConnection(RespConnection connection) {
        this.connection = connection;
    }

    public <R> R sync(RedisCommand<R> command, Object... params) {
        List<Object> args = new ArrayList<>(command.getName());
        args.addAll(Arrays.asList(params));
        try {
            return command.decode(connection.call(args.toArray()));
        } catch (IOException e) {
            throw new UncheckedIOException(command + " failed", e);
        }
    }

    public void closeAsync() {
        connection.close();
    }
}
