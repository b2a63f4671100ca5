package io.rlock;

import io.rlock.internal.*;

import io.rlock.internal.resp.RedisUri;
import io.rlock.internal.resp.RespTransport;

/**
 * The entry point: one client per JVM (or per server) is enough, and any number of threads
 * share it. It keeps one connection per Redis node (two on a RESP2-only server) for every call,
 * every wait and every watchdog holding of its threads, and one maintenance thread.
 *
 * <pre>{@code
 * try (RLockClient rlock = RLockClient.create("redis://localhost:6379")) {
 *     RLock lock = rlock.getLock("orders:42");
 *     lock.lock();
 *     try {
 *         ship(42, lock.getToken());
 *     } finally {
 *         lock.unlock();
 *     }
 * }
 * }</pre>
 */
public final class RLockClient implements AutoCloseable {
    private final Engine engine;
    /** Where it connected: what {@link #getConfig()} describes; null over a transport module (the user's client is configured there). */
    private final RedisUri uri;

    static {
        Clients.register((options, transport) -> new RLockClient(new Engine(options.copy(), transport), null));
    }

    private RLockClient(Engine engine, RedisUri uri) {
        this.engine = engine;
        this.uri = uri;
    }

    /**
     * Connects to {@code redis://[[user]:password@]host[:port][/db]} ({@code rediss://} for TLS
     * with the JDK's default trust store). In Redis Cluster, any master: the others are found
     * through redirections. Redis Sentinel:
     * {@code redis-sentinel://[[user]:password@]host:port[,host:port...]/mastername} (Lettuce's form;
     * {@code #mastername} too): the primary the sentinels name, followed through failovers.
     *
     * @throws RLockException when the server cannot be reached, refuses the credentials, or
     *         has no rlock module
     */
    public static RLockClient create(String redisUri) {
        return create(redisUri, new RLockOptions());
    }

    /** Through Redis Sentinel, as {@link RLockOptions#sentinel(String, String...)} says. */
    public static RLockClient create(RLockOptions options) {
        if (options.masterName == null) {
            throw new IllegalArgumentException("RLockOptions.sentinel(masterName, host:port...) or a URI");
        }
        return connect(RedisUri.sentinel(options.masterName, options.sentinels, null, null, 0), options);
    }

    public static RLockClient create(String redisUri, RLockOptions options) {
        return connect(RedisUri.parse(redisUri), options);
    }

    /**
     * Redisson's {@code Redisson.create(config)}: the server mode, addresses, credentials, name
     * mapper and timeouts of {@code config} (see {@link Config}). A cluster's node addresses are
     * tried in turn until one answers.
     *
     * @throws RLockException when no address given can be reached (the last failure)
     */
    public static RLockClient create(Config config) {
        RLockOptions options = config.toOptions();
        RLockException last = null;
        for (RedisUri uri : config.uris()) {
            try {
                return connect(uri, options);
            } catch (RLockException e) {
                if (last != null) {
                    e.addSuppressed(last);
                }
                last = e;
            }
        }
        throw last;
    }

    private static RLockClient connect(RedisUri uri, RLockOptions options) {
        RLockOptions copy = options.copy();
        return new RLockClient(new Engine(copy, new RespTransport(uri, copy)), uri);
    }

    /**
     * This client (its connections, owner ids and holdings) with other confirmation by the
     * replicas for the handles it gives out, e.g.
     * {@code rlock.withConfirm(Confirm.replicas(1).timeout(Duration.ofSeconds(2))).getLock("k")}.
     * Closing either closes both.
     */
    public RLockClient withConfirm(Confirm confirm) {
        return new RLockClient(engine.with(confirm == null ? Confirm.off() : confirm), uri);
    }

    /** This client's id: the first part of its owner ids ({@code <id>:<thread id>}). */
    public String getId() {
        return engine.id;
    }

    public RLock getLock(String name) {
        return new LockImpl(engine, engine.key(name), Family.LOCK);
    }

    /**
     * Redisson's {@code getFairLock}: the same lock as {@link #getLock} (every rlock lock queues
     * FIFO), except that {@code unlock()} after the holding ended, with nobody holding the lock,
     * is silent as Redisson's fair lock (another holder: {@code IllegalMonitorStateException}).
     */
    public RLock getFairLock(String name) {
        return LockImpl.fair(engine, engine.key(name));
    }

    /**
     * This client's configuration (Redisson's {@code getConfig()}): its server mode and address
     * (a cluster's: the node it was seeded with), credentials, name mapper, watchdog lease;
     * {@code RLockClient.create(getConfig())} connects another client alike. A copy: changing it
     * does not change this client.
     */
    public Config getConfig() {
        if (uri == null) {
            throw new UnsupportedOperationException("this client works over your own Redis client: its configuration is there");
        }
        return Config.of(uri, engine.options(), engine.router().isCluster());
    }

    /**
     * Redisson's {@code RedissonMultiLock}: {@code locks} (plain locks of this client) taken all
     * or none, in one step ({@code RLOCK.ACQUIREALL}); see {@link MultiLock}.
     */
    public MultiLock getMultiLock(RLock... locks) {
        return MultiLock.of(engine, locks);
    }

    public RReadWriteLock getReadWriteLock(String name) {
        return new ReadWriteLockImpl(engine, engine.key(name));
    }

    /** Redisson's {@code RSemaphore}: counted permits that belong to nobody (any thread releases). */
    public RSemaphore getSemaphore(String name) {
        return new CountingSemaphoreImpl(engine, engine.key(name));
    }

    /**
     * Permits that belong to the acquiring thread ({@code RSEM.*}, not Redisson's): only it
     * releases them, they come back when this client's connection dies, and each grant has a
     * fencing token ({@link ROwnedSemaphore#getToken()}).
     */
    public ROwnedSemaphore getOwnedSemaphore(String name) {
        return new SemaphoreImpl(engine, engine.key(name));
    }

    public RPermitExpirableSemaphore getPermitExpirableSemaphore(String name) {
        return new PermitSemaphoreImpl(engine, engine.key(name));
    }

    public RCountDownLatch getCountDownLatch(String name) {
        return new LatchImpl(engine, engine.key(name));
    }

    /** The keys of the database on every primary (Redisson's {@code getKeys()}): {@code count()}, {@code flushall()}. */
    public RKeys getKeys() {
        return new KeysImpl(engine);
    }

    /**
     * An election among candidates of {@code name} (the lock {@code name} itself), as
     * {@code candidate}: see {@link Election}.
     */
    public Election getElection(String name, String candidate) {
        return new Election(engine, engine.key(name), candidate);
    }

    /** Told of each holding that ended without its owner's release (see {@link LockLostListener}). */
    public void addLockLostListener(LockLostListener listener) {
        engine.holdings().addListener(listener);
    }

    public void removeLockLostListener(LockLostListener listener) {
        engine.holdings().removeListener(listener);
    }

    /**
     * Closes the connections: the watchdog holdings of this client end at once (plain leases
     * run to their end), and waiting threads get {@link RLockException}.
     */
    @Override
    public void close() {
        engine.close();
    }

    /** Redisson's name for {@link #close()}. */
    public void shutdown() {
        close();
    }

    /** Registered waits, abandoned latch waits included (diagnostics and tests). */
    int waiters() {
        return engine.dispatcher().size();
    }

    /** Holdings this client keeps track of (diagnostics and tests). */
    int holdings() {
        return engine.holdings().size();
    }
}
