package io.rlock.redisson;

import io.rlock.internal.resp.RespConnection;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.Connector;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.redisson.client.RedisClient;
import org.redisson.client.RedisPubSubConnection;
import org.redisson.connection.ConnectionManager;
import org.redisson.connection.MasterSlaveEntry;
import org.redisson.misc.RedisURI;

/**
 * Opens the engine's connections with the Redisson client of the node Redisson's connection
 * manager serves it from: a new dedicated connection of that client (not one of its pools).
 */
final class RedissonConnector implements Connector {
    private final ConnectionManager nodes;

    RedissonConnector(ConnectionManager nodes) {
        this.nodes = nodes;
    }

    /** {@code host:port} of the primary Redisson serves (a single server's, a Sentinel setup's master). */
    String primaryAddress() {
        MasterSlaveEntry entry = nodes.getEntrySet().stream().findFirst()
                .orElseThrow(() -> new IllegalArgumentException("Redisson knows no primary"));
        RedisURI address = entry.getClient().getConfig().getAddress();
        String host = address.getHost();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + address.getPort();
    }

    @Override
    public Connection open(RespConnection.Settings settings) throws IOException {
        RedisClient client = clientOf(settings.host(), settings.port());
        RedisPubSubConnection connection;
        try {
            connection = client.connectPubSubAsync().toCompletableFuture()
                    .get(client.getConfig().getConnectTimeout() + settings.responseTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while connecting through Redisson to " + client.getAddr(), e);
        } catch (ExecutionException | TimeoutException e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            throw new IOException("cannot connect through Redisson to " + settings.host() + ":" + settings.port() + ": " + cause.getMessage(), cause);
        }
        RedissonConnection opened = new RedissonConnection(connection, settings.listener(), settings.host(), settings.port(), settings.responseTimeout());
        try {
            opened.start(settings.clientName());
        } catch (IOException | RuntimeException e) {
            opened.close();
            throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
        }
        return opened;
    }

    /** The Redisson client of the node at {@code host:port}, as Redisson's connection manager knows it. */
    private RedisClient clientOf(String host, int port) throws IOException {
        for (MasterSlaveEntry entry : nodes.getEntrySet()) {
            RedisClient client = entry.getClient();
            if (client != null && names(client, host, port)) {
                return client;
            }
        }
        throw new IOException("Redisson serves no primary at " + host + ":" + port);
    }

    private static boolean names(RedisClient client, String host, int port) {
        RedisURI configured = client.getConfig().getAddress();
        if (configured != null && configured.getPort() == port && configured.getHost().equals(host)) {
            return true;
        }
        InetSocketAddress resolved = client.getAddr();
        return resolved != null && resolved.getPort() == port
                && (host.equals(resolved.getHostString()) || (resolved.getAddress() != null && host.equals(resolved.getAddress().getHostAddress())));
    }
}
