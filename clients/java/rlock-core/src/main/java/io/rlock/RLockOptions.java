package io.rlock;

import io.rlock.internal.*;

import java.time.Duration;

/**
 * What the engine does over the transport a client is made with ({@code LettuceRLocks.of(client,
 * uri, options)}, {@code JedisRLocks.of(..., options)}, {@code SpringDataRLocks.of(factory, options)};
 * {@code RLocks.of(redisson)} reads them from Redisson's {@code Config}): the watchdog's lease,
 * confirmation by the replicas, the name mapper and the engine's own timeouts. Addresses, TLS,
 * credentials, the protocol, Sentinel and Cluster are the client library's settings. Every
 * setter returns this.
 */
public final class RLockOptions {
    Duration connectTimeout = Duration.ofSeconds(5);
    Duration responseTimeout = Duration.ofSeconds(10);
    Duration watchdogLease = Duration.ofSeconds(30);
    Confirm confirm = Confirm.auto();
    NameMapper nameMapper = NameMapper.direct();

    public RLockOptions connectTimeout(Duration timeout) {
        this.connectTimeout = timeout;
        return this;
    }

    /** How long a call waits for its reply before the connection counts as broken (default 10 s). */
    public RLockOptions responseTimeout(Duration timeout) {
        this.responseTimeout = timeout;
        return this;
    }

    /**
     * The lease of a holding taken without a lease time, which the server's watchdog renews
     * while this client's connection lives (Redisson's {@code lockWatchdogTimeout}; default 30 s).
     */
    public RLockOptions watchdogLease(Duration lease) {
        if (lease.toMillis() < 1) {
            throw new IllegalArgumentException("a lease of at least 1 ms");
        }
        this.watchdogLease = lease;
        return this;
    }

    /** The watchdog's lease in ms (Redisson's {@code getLockWatchdogTimeout()}). */
    public long getLockWatchdogTimeout() {
        return watchdogLease.toMillis();
    }

    /**
     * Confirmation by the replicas of every acquisition and release (default {@link Confirm#auto()}:
     * the replicas connected at the time, none on a server without replicas); see {@link Confirm}.
     */
    public RLockOptions confirm(Confirm confirm) {
        this.confirm = confirm == null ? Confirm.off() : confirm;
        return this;
    }

    /**
     * Redisson's {@code NameMapper}: every object name becomes its key through
     * {@code mapper.map} and is reported back through {@code mapper.unmap} (default: as given).
     */
    public RLockOptions nameMapper(NameMapper mapper) {
        if (mapper == null) {
            throw new IllegalArgumentException("a NameMapper (NameMapper.direct() for none)");
        }
        this.nameMapper = mapper;
        return this;
    }

    /** A copy: what a client hands out of its options cannot change them. */
    RLockOptions copy() {
        RLockOptions copy = new RLockOptions();
        copy.connectTimeout = connectTimeout;
        copy.responseTimeout = responseTimeout;
        copy.watchdogLease = watchdogLease;
        copy.confirm = confirm;
        copy.nameMapper = nameMapper;
        return copy;
    }

    // What the client reads back.

    /** The value set by {@link #connectTimeout(Duration)} (or its default). */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /** The value set by {@link #responseTimeout(Duration)} (or its default). */
    public Duration responseTimeout() {
        return responseTimeout;
    }

    /** The value set by {@link #watchdogLease(Duration)} (or its default). */
    public Duration watchdogLease() {
        return watchdogLease;
    }

    /** The value set by {@link #confirm(Confirm)} (or its default). */
    public Confirm confirm() {
        return confirm;
    }

    /** The value set by {@link #nameMapper(NameMapper)} (or its default). */
    public NameMapper nameMapper() {
        return nameMapper;
    }
}
