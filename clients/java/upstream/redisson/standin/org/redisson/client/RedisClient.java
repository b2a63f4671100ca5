package org.redisson.client;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import rlock.resp.RedisUri;
import rlock.resp.RespConnection;

/**
 * Stand-in for Redisson's low-level {@code RedisClient} (test code, as Testcontainers' is): plain
 * connections to one server over rlock's RESP connection, for the commands a vendored test
 * sends itself ({@code PUBSUB CHANNELS}).
 */
public class RedisClient {
    private final RedisUri uri;
    private final List<RedisConnection> connections = new ArrayList<>();

    private RedisClient(RedisClientConfig config) {
        if (config.getAddress() == null) {
            throw new IllegalArgumentException("RedisClientConfig.setAddress(redis://host:port) first");
        }
        this.uri = RedisUri.parse(config.getAddress());
    }

    public static RedisClient create(RedisClientConfig config) {
        return new RedisClient(config);
    }

    public synchronized RedisConnection connect() {
        try {
            RedisConnection connection = new RedisConnection(
                    RespConnection.open(new RespConnection.Settings().uri(uri, null).clientName("redisson-standin")));
            connections.add(connection);
            return connection;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot connect to " + uri, e);
        }
    }

    public synchronized void shutdown() {
        connections.forEach(RedisConnection::closeAsync);
        connections.clear();
    }
}
