package io.rlock.lettuce;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;

/**
 * Any command, as words, sent through a Lettuce connection and answered in the engine's value
 * model ({@code String}, {@code Long}, {@code List}, {@link io.rlock.internal.transport.RespError}
 * for an error reply): rlock's module commands have no typed Lettuce method. The sessions send
 * every call through it; the test fixtures' admin connections (rlock-test-support) too, so that
 * their checks read replies as the engine does.
 */
public final class RawCommands {
    private RawCommands() {
    }

    /**
     * {@code command[0]} is the command's name; the rest its arguments (byte[], numbers, text).
     * RESP3 maps come as flat lists of keys and values, as the engine reads them.
     */
    public static RedisFuture<Object> dispatch(RedisAsyncCommands<byte[], byte[]> connection, Object... command) {
        return connection.dispatch(keyword(String.valueOf(command[0])), new ReplyOutput(false), arguments(command));
    }

    /** As {@link #dispatch}, with RESP3 maps as {@code Map}s. */
    public static RedisFuture<Object> dispatchKeepingMaps(RedisAsyncCommands<byte[], byte[]> connection, Object... command) {
        return connection.dispatch(keyword(String.valueOf(command[0])), new ReplyOutput(true), arguments(command));
    }

    private static CommandArgs<byte[], byte[]> arguments(Object[] command) {
        CommandArgs<byte[], byte[]> args = new CommandArgs<>(ByteArrayCodec.INSTANCE);
        for (int i = 1; i < command.length; i++) {
            Object arg = command[i];
            if (arg instanceof byte[] bytes) {
                args.add(bytes);
            } else if (arg instanceof Long || arg instanceof Integer) {
                args.add(((Number) arg).longValue());
            } else {
                args.add(String.valueOf(arg));
            }
        }
        return args;
    }

    /** The keywords made so far, by name: the engine sends a few names, over and over (issue 46, allocation). */
    private static final java.util.concurrent.ConcurrentHashMap<String, ProtocolKeyword> KEYWORDS = new java.util.concurrent.ConcurrentHashMap<>();
    /** Enough for every command the engine and the fixtures send; names past it are made per call. */
    private static final int KEYWORDS_KEPT = 256;

    private static ProtocolKeyword keyword(String name) {
        ProtocolKeyword known = KEYWORDS.get(name);
        if (known != null) {
            return known;
        }
        ProtocolKeyword made = newKeyword(name);
        if (KEYWORDS.size() < KEYWORDS_KEPT) {
            KEYWORDS.putIfAbsent(name, made);
        }
        return made;
    }

    private static ProtocolKeyword newKeyword(String name) {
        byte[] bytes = name.getBytes(StandardCharsets.US_ASCII);
        return new ProtocolKeyword() {
            @Override
            public byte[] getBytes() {
                return bytes;
            }

            @Override
            public String toString() {
                return name;
            }
        };
    }
}
