package io.rlock.testing;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.rlock.lettuce.RawCommands;
import java.io.IOException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A test's own connection to one server for its checks (RESP3, over Lettuce): any command as
 * words, the reply in the engine's value model (an error reply returned as a
 * {@link io.rlock.internal.transport.RespError}). It does not reconnect: a test that stops
 * the server sees its calls fail.
 */
public final class AdminConnection implements AutoCloseable {
    /** One Lettuce client (its threads) for every admin connection of the JVM. */
    private static final RedisClient LETTUCE = adminClient();

    private final StatefulRedisConnection<byte[], byte[]> connection;

    private AdminConnection(StatefulRedisConnection<byte[], byte[]> connection) {
        this.connection = connection;
    }

    /** A connection to 127.0.0.1:{@code port}; {@code password} null for none. */
    public static AdminConnection open(int port, String password) throws IOException {
        RedisURI.Builder uri = RedisURI.Builder.redis("127.0.0.1", port);
        if (password != null) {
            uri.withPassword(password.toCharArray());
        }
        return open(uri.build());
    }

    /** A connection to {@code uri} (its address, credentials, database). */
    public static AdminConnection open(RedisURI uri) throws IOException {
        int port = uri.getPort();
        try {
            return new AdminConnection(LETTUCE.connect(ByteArrayCodec.INSTANCE, uri));
        } catch (RuntimeException e) {
            throw new IOException("admin connection to port " + port + ": " + e.getMessage(), e);
        }
    }

    /** One command; an error reply is returned, a broken connection throws. */
    public Object call(Object... args) throws IOException {
        try {
            return RawCommands.dispatchKeepingMaps(connection.async(), args).get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(args[0] + ": interrupted", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException(args[0] + ": " + e.getMessage(), e);
        }
    }

    /** One command after {@code ASKING}: a cluster node serves a slot it is importing. */
    public Object callAsking(Object... args) throws IOException {
        call("ASKING");
        return call(args);
    }

    @Override
    public void close() {
        connection.close();
    }

    private static RedisClient adminClient() {
        RedisClient client = RedisClient.create();
        client.setOptions(ClientOptions.builder().autoReconnect(false).build());
        return client;
    }
}
