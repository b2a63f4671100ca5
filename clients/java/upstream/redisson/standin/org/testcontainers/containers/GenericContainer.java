package org.testcontainers.containers;

import java.io.IOException;
import java.io.UncheckedIOException;
import rlock.testing.RedisServer;

/**
 * Stand-in for Testcontainers' {@code GenericContainer}, with only the calls the vendored
 * Redisson tests make: instead of a Docker image, a local redis-server with the rlock module
 * ({@link RedisServer}: free port, temporary directory, ready at PING, killed on stop).
 */
public class GenericContainer<SELF extends GenericContainer<SELF>> {
    private final String[] serverOptions;
    private RedisServer server;

    /** {@code serverOptions}: redis-server's command-line options, as the tests pass them to the image. */
    public GenericContainer(String... serverOptions) {
        this.serverOptions = serverOptions;
    }

    public void start() {
        try {
            server = RedisServer.start(serverOptions);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public void stop() {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    public Integer getFirstMappedPort() {
        if (server == null) {
            throw new IllegalStateException("the container is not started");
        }
        return server.port;
    }
}
