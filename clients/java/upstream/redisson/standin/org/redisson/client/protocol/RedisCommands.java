package org.redisson.client.protocol;

import java.util.List;
import rlock.resp.RespConnection;

/** Stand-in for Redisson's {@code RedisCommands}: the commands the vendored tests send themselves. */
public final class RedisCommands {
    public static final RedisCommand<List<String>> PUBSUB_CHANNELS = new RedisCommand<>(
            reply -> ((List<?>) reply).stream().map(RespConnection::text).toList(), "PUBSUB", "CHANNELS");

    private RedisCommands() {
    }
}
