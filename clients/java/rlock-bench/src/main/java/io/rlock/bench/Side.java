package io.rlock.bench;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.rlock.RLockClient;
import io.rlock.lettuce.LettuceRLocks;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import java.util.List;
import java.util.concurrent.locks.Lock;

/**
 * One library under test, as its users run it: one client per JVM, a {@link Lock} per name, the
 * watchdog lease ({@code lock()} with no lease), and how the bench sees on the server that a
 * caller is waiting for a name (so that a hand-off is timed from a release that has a waiter).
 */
abstract class Side implements AutoCloseable {
    final String name;

    Side(String name) {
        this.name = name;
    }

    abstract Lock lock(String key);

    /** Whether a caller is waiting for {@code key}, asked through {@code admin}. */
    abstract boolean waiting(AdminConnection admin, String key);

    @Override
    public abstract void close();

    /** Our client and the transport it runs on, closed together. */
    record OurClient(RLockClient locks, Runnable shutdownTransport) implements AutoCloseable {
        @Override
        public void close() {
            try {
                locks.close();
            } finally {
                shutdownTransport.run();
            }
        }
    }

    /**
     * Our client, as a Spring or Lettuce user runs it: rlock over their Lettuce RedisClient. The one
     * place the bench and the cost test build it.
     */
    static OurClient ourClient(String uri) {
        RedisClient lettuce = RedisClient.create();
        return new OurClient(LettuceRLocks.of(lettuce, RedisURI.create(uri)), lettuce::shutdown);
    }

    /** rlock with its defaults (the server's watchdog, confirmation by the connected replicas: {@code Confirm.auto()}) over Lettuce. */
    static Side rlock(String uri) {
        OurClient client = ourClient(uri);
        return new Side("rlock") {
            @Override
            Lock lock(String key) {
                return client.locks().getLock(key);
            }

            @Override
            boolean waiting(AdminConnection admin, String key) {
                return Admin.waiters(admin, key) > 0;
            }

            @Override
            public void close() {
                client.close();
            }
        };
    }

    /**
     * Redisson's {@code getLock} with its defaults. With {@code replicas} (synced runs) Redisson is
     * told of them by {@code useMasterSlaveServers()}: only then does its lock send
     * {@code WAIT} after each write ({@code Config.checkLockSyncedSlaves}, true by default;
     * {@code slavesSyncTimeout} 1 s), which single-server mode never does (it knows no replica).
     */
    static Side redisson(String uri, List<String> replicas) {
        Config config = new Config();
        if (replicas.isEmpty()) {
            config.useSingleServer().setAddress(uri);
        } else {
            var servers = config.useMasterSlaveServers().setMasterAddress(uri);
            replicas.forEach(servers::addSlaveAddress);
        }
        config.setCheckLockSyncedSlaves(true);
        config.setSlavesSyncTimeout(1000);
        RedissonClient client = Redisson.create(config);
        return new Side("redisson") {
            @Override
            Lock lock(String key) {
                return client.getLock(key);
            }

            @Override
            boolean waiting(AdminConnection admin, String key) {
                // A waiting Redisson lock() listens on its lock's channel for the release message.
                Object reply = Admin.call(admin, "PUBSUB", "NUMSUB", "redisson_lock__channel:{" + key + "}");
                return reply instanceof List<?> list && list.size() == 2 && ((Long) list.get(1)) > 0;
            }

            @Override
            public void close() {
                client.shutdown();
            }
        };
    }
}
