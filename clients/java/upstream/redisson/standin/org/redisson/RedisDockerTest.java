package org.redisson;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.testcontainers.containers.GenericContainer;
import rlock.RLockClient;
import rlock.resp.RespConnection;

/**
 * Stand-in for Redisson's test base class (revision in ../../../README.md), with only what the
 * vendored lock tests use: one shared server (a local redis-server with the rlock module, see
 * {@link GenericContainer}), the shared client {@code redisson}, a "config" that is the server's
 * URI (our client takes a URI where Redisson takes a {@code Config}), a FLUSHALL before
 * each test, and the tests expected to fail for a deliberate difference
 * ({@link DeliberateDifferences}). Redisson's Docker cluster and Sentinel harnesses are left out.
 */
@ExtendWith(DeliberateDifferences.class)
// Each test's limit (inherited by the vendored classes): above test.sh's 60 s default, which
// some of Redisson's tests exceed by design (testReadLockExpirationRenewal sleeps 5 x 35 s,
// testMultipleLocks takes 500 x 200 ms, testLockUninterruptibly waits a 1 min sleep).
@Timeout(240)
public class RedisDockerTest {

    protected static final String NOTIFY_KEYSPACE_EVENTS = "--notify-keyspace-events";

    protected static final GenericContainer<?> CONTAINER = createContainer();

    protected static RLockClient redisson;

    protected static GenericContainer<?> createContainer(String... params) {
        return new GenericContainer<>(params);
    }

    static {
        CONTAINER.start();
        redisson = RLockClient.create(createConfig());

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            redisson.shutdown();
            CONTAINER.stop();
        }));
    }

    /** A new shared client: closing the old one ends the waits a test's threads left behind. */
    static void replaceClient() {
        redisson.shutdown();
        redisson = createInstance();
    }

    protected static String createConfig() {
        return createConfig(CONTAINER);
    }

    protected static String createConfig(GenericContainer<?> container) {
        return "redis://127.0.0.1:" + container.getFirstMappedPort();
    }

    public static RLockClient createInstance() {
        return RLockClient.create(createConfig());
    }

    protected void testWithParams(Consumer<RLockClient> redissonCallback, String... params) {
        GenericContainer<?> redis = createContainer(params);
        redis.start();

        RLockClient redisson = RLockClient.create(createConfig(redis));

        try {
            redissonCallback.accept(redisson);
        } finally {
            redisson.shutdown();
            redis.stop();
        }
    }

    @BeforeEach
    public void beforeEach() {
        try (RespConnection admin = CONTAINER.server().admin()) {
            admin.call("FLUSHALL");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
