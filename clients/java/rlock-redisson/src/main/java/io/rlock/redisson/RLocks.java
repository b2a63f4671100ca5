package io.rlock.redisson;

import io.rlock.Confirm;
import io.rlock.NameMapper;
import io.rlock.RLockClient;
import io.rlock.RLockException;
import io.rlock.RLockOptions;
import io.rlock.internal.Clients;
import java.time.Duration;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.DefaultNameMapper;
import org.redisson.connection.ConnectionManager;
import org.redisson.connection.ServiceManager;

/**
 * rlock's locks over the user's own {@link RedissonClient}: {@code RLocks.of(redisson)} gives
 * an {@link RLockClient} (every type of the API) whose sessions are dedicated connections opened
 * by Redisson's own clients of the nodes, so Redisson's {@code Config} serves rlock: addresses,
 * TLS, credentials, database, timeouts, and its {@code NameMapper} (names mapped as Redisson
 * maps them), {@code lockWatchdogTimeout} (the watchdog lease) and {@code slavesSyncTimeout}
 * (how long the replicas have to confirm a write). Closing the RLockClient closes only its own
 * sessions, never {@code redisson}.
 */
public final class RLocks {
    private RLocks() {
    }

    /** An RLockClient over {@code redisson}, configured from its {@code Config}. */
    public static RLockClient of(RedissonClient redisson) {
        if (redisson == null) {
            throw new IllegalArgumentException("a RedissonClient, not null");
        }
        return of(redisson, options(redisson));
    }

    /**
     * As above with rlock's own options (watchdog lease, confirmation, name mapper, timeouts);
     * the connection settings stay Redisson's.
     *
     * @throws IllegalArgumentException when {@code redisson} is not Redisson's own client or is shut down
     * @throws RLockException when the server cannot be reached or has no rlock module
     */
    public static RLockClient of(RedissonClient redisson, RLockOptions options) {
        if (redisson == null || options == null) {
            throw new IllegalArgumentException("a RedissonClient and options, not null");
        }
        RedissonTransport transport = new RedissonTransport(connectionManager(redisson));
        try {
            return Clients.create(options, transport);
        } catch (RuntimeException e) {
            transport.close();
            throw e;
        }
    }

    /** rlock's options as Redisson's Config says. */
    static RLockOptions options(RedissonClient redisson) {
        ServiceManager service = serviceManager(redisson);
        org.redisson.config.Config config = service.getCfg();
        Duration syncTimeout = Duration.ofMillis(config.getSlavesSyncTimeout());
        RLockOptions options = new RLockOptions()
                .watchdogLease(Duration.ofMillis(config.getLockWatchdogTimeout()))
                .connectTimeout(Duration.ofMillis(service.getConfig().getConnectTimeout()))
                // A confirmed write waits up to the sync timeout for WAIT's reply beyond the command's own.
                .responseTimeout(Duration.ofMillis(service.getConfig().getTimeout()).plus(syncTimeout))
                .confirm(Confirm.auto().timeout(syncTimeout));
        org.redisson.config.NameMapper mapper = service.getNameMapper();
        if (mapper != null && !(mapper instanceof DefaultNameMapper)) {
            options.nameMapper(new NameMapper() {
                @Override
                public String map(String name) {
                    return mapper.map(name);
                }

                @Override
                public String unmap(String name) {
                    return mapper.unmap(name);
                }
            });
        }
        return options;
    }

    private static ConnectionManager connectionManager(RedissonClient redisson) {
        if (!(redisson instanceof Redisson own)) {
            throw new IllegalArgumentException("a client made by Redisson.create(config), not " + redisson.getClass().getName());
        }
        if (redisson.isShutdown() || redisson.isShuttingDown()) {
            throw new IllegalArgumentException("the RedissonClient is shut down");
        }
        return own.getCommandExecutor().getConnectionManager();
    }

    private static ServiceManager serviceManager(RedissonClient redisson) {
        return connectionManager(redisson).getServiceManager();
    }
}
