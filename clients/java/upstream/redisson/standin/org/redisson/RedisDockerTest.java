package org.redisson;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.testcontainers.containers.GenericContainer;
import rlock.Config;
import rlock.RLockClient;
import rlock.testing.Topology;

/**
 * Stand-in for Redisson's test base class (revision in ../../../README.md), with only what the
 * vendored lock tests use: one shared server (a local redis-server with the rlock module, see
 * {@link GenericContainer}), the shared client {@code redisson}, its {@code Config}
 * ({@link Config}, the client's counterpart of Redisson's), a FLUSHALL before
 * each test, the tests expected to fail for a deliberate difference
 * ({@link DeliberateDifferences}), and {@link #testInCluster}: Redisson's Docker cluster of 3
 * masters and 3 replicas is the shared harness's ({@link Topology}, {@code cluster}), started
 * at a class's first call and stopped after the class. Redisson's Sentinel harness is left out.
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

    protected static RLockClient redissonCluster;

    private static Topology cluster;

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

    protected static Config createConfig() {
        return createConfig(CONTAINER);
    }

    protected static Config createConfig(GenericContainer<?> container) {
        Config config = new Config();
        config.useSingleServer().setAddress("redis://127.0.0.1:" + container.getFirstMappedPort());
        return config;
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

    protected static void testInCluster(Consumer<RLockClient> redissonCallback) {
        if (redissonCluster == null) {
            try {
                cluster = Topology.start("cluster");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            redissonCluster = RLockClient.create(cluster.seedUri());
        }

        redissonCallback.accept(redissonCluster);
    }

    @AfterAll
    static void stopCluster() {
        if (redissonCluster != null) {
            redissonCluster.shutdown();
            redissonCluster = null;
        }
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    @BeforeEach
    public void beforeEach() {
        redisson.getKeys().flushall();
        if (redissonCluster != null) {
            redissonCluster.getKeys().flushall();
        }
    }
}
