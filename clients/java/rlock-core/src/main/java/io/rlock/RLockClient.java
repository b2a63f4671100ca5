package io.rlock;

import io.rlock.internal.*;

/**
 * The entry point, made over the Redis client the application already configured (its
 * addresses, TLS, credentials, Sentinel or Cluster settings): {@code RLocks.of(redisson)}
 * (rlock-redisson), {@code LettuceRLocks.of(...)} (rlock-lettuce), {@code JedisRLocks.of(...)}
 * (rlock-jedis) or {@code SpringDataRLocks.of(connectionFactory)} (rlock-spring-data). One per
 * JVM (or per server) is enough, and any number of threads share it.
 *
 * <pre>{@code
 * try (RLockClient rlock = RLocks.of(redisson)) {
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

    static {
        Clients.register((options, transport) -> new RLockClient(new Engine(options.copy(), transport)));
    }

    private RLockClient(Engine engine) {
        this.engine = engine;
    }

    /**
     * This client (its connections, owner ids and holdings) with other confirmation by the
     * replicas for the handles it gives out, e.g.
     * {@code rlock.withConfirm(Confirm.replicas(1).timeout(Duration.ofSeconds(2))).getLock("k")}.
     * Closing either closes both.
     */
    public RLockClient withConfirm(Confirm confirm) {
        return new RLockClient(engine.with(confirm == null ? Confirm.off() : confirm));
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
