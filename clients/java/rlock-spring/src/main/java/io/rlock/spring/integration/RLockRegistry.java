package io.rlock.spring.integration;

import io.rlock.RLockClient;
import io.rlock.spring.RLockClients;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;
import org.springframework.scheduling.TaskScheduler;

/**
 * Spring Integration's {@code RedisLockRegistry}, on rlock: replace
 * {@code new RedisLockRegistry(connectionFactory, "app")} by
 * {@code new RLockRegistry(connectionFactory, "app")}. The lock of {@code obtain(path)} is the
 * rlock lock at key {@code registryKey + ":" + path}, owned by the calling thread; it lives as
 * long as the process's connection (the server's watchdog) unless a time to live is given, so a
 * killed holder's lock passes on in milliseconds, and a waiter waits in the server's queue.
 */
public final class RLockRegistry
        implements ExpirableLockRegistry<DistributedLock>, RenewableLockRegistry<DistributedLock>, DisposableBean {

    /** RedisLockRegistry's default time to live, used by {@link #renewLock(Object)}. */
    public static final Duration DEFAULT_EXPIRE_AFTER = Duration.ofSeconds(60);

    private final RLockClient client;
    private final boolean ownsClient;
    private final String registryKey;
    private final Duration expireAfter;
    private final ConcurrentMap<String, RegistryLock> locks = new ConcurrentHashMap<>();

    /** As {@code new RedisLockRegistry(connectionFactory, registryKey)}; closes its client on destroy. */
    public RLockRegistry(RedisConnectionFactory connectionFactory, String registryKey) {
        // The key is checked before a client connects: a refused bean leaves no connection behind.
        this(requireKey(registryKey), DEFAULT_EXPIRE_AFTER, RLockClients.fromConnectionFactory(connectionFactory), true);
    }

    /**
     * As {@code new RedisLockRegistry(connectionFactory, registryKey, expireAfter)}:
     * {@code expireAfter} is the time to live {@link #renewLock(Object)} sets (see below).
     */
    public RLockRegistry(RedisConnectionFactory connectionFactory, String registryKey, Duration expireAfter) {
        this(requireKey(registryKey), RegistryLock.requirePositive(expireAfter, "expireAfter"),
                RLockClients.fromConnectionFactory(connectionFactory), true);
    }

    /** On a client the application manages (and closes). */
    public RLockRegistry(RLockClient client, String registryKey) {
        this(requireKey(registryKey), DEFAULT_EXPIRE_AFTER, client, false);
    }

    /**
     * With the time to live {@link #renewLock(Object)} sets; {@code lock()} still holds by the
     * watchdog (RedisLockRegistry's {@code expireAfter} is the lease of every lock it takes).
     */
    public RLockRegistry(RLockClient client, String registryKey, Duration expireAfter) {
        this(requireKey(registryKey), RegistryLock.requirePositive(expireAfter, "expireAfter"), client, false);
    }

    private RLockRegistry(String registryKey, Duration expireAfter, RLockClient client, boolean ownsClient) {
        if (client == null) {
            throw new IllegalArgumentException("'client' cannot be null");
        }
        this.client = client;
        this.ownsClient = ownsClient;
        this.registryKey = registryKey;
        this.expireAfter = expireAfter;
    }

    /**
     * The lock for {@code lockKey} (a String, as RedisLockRegistry requires); the same object for
     * the same key until {@link #expireUnusedOlderThan} drops it.
     */
    @Override
    public DistributedLock obtain(Object lockKey) {
        String path = path(lockKey);
        return locks.computeIfAbsent(path, p -> new RegistryLock(client.getLock(registryKey + ':' + p), p));
    }

    /** Drops from the cache the locks last taken more than {@code age} ms ago and not held in this process. */
    @Override
    public void expireUnusedOlderThan(long age) {
        long now = System.currentTimeMillis();
        locks.values().removeIf(lock -> lock.lockedAt() > 0 && now - lock.lockedAt() > age
                && !lock.isAcquiredInThisProcess());
    }

    /** Resets the calling thread's holding's time to live to the registry's {@code expireAfter}. */
    @Override
    public void renewLock(Object lockKey) {
        renewLock(lockKey, expireAfter);
    }

    /**
     * Resets the calling thread's holding's time to live to {@code ttl}.
     *
     * @throws IllegalStateException when the calling thread does not hold the lock
     */
    @Override
    public void renewLock(Object lockKey, Duration ttl) {
        RegistryLock lock = (RegistryLock) obtain(lockKey);
        lock.renew(ttl);
    }

    /**
     * Accepted and not used: the server renews watchdog holdings itself, with no renewal thread
     * (the races of RedisLockRegistry's renewal task cannot happen).
     */
    @Override
    public void setRenewalTaskScheduler(TaskScheduler renewalTaskScheduler) {
        if (renewalTaskScheduler == null) {
            throw new IllegalArgumentException("'renewalTaskScheduler' must not be null");
        }
    }

    /** Closes the client when the registry built it: its holdings end with its connection. */
    @Override
    public void destroy() {
        if (ownsClient) {
            client.close();
        }
    }

    /** The client the registry's locks go through. */
    public RLockClient getClient() {
        return client;
    }

    private static String requireKey(String registryKey) {
        if (registryKey == null || registryKey.isEmpty()) {
            throw new IllegalArgumentException("'registryKey' cannot be null or empty");
        }
        return registryKey;
    }

    private static String path(Object lockKey) {
        if (!(lockKey instanceof String path)) {
            throw new IllegalArgumentException("the lock key must be a String, got "
                    + (lockKey == null ? "null" : lockKey.getClass().getName()));
        }
        return path;
    }
}
