package io.rlock;

import io.rlock.internal.*;

import java.time.Duration;
import javax.net.ssl.SSLSocketFactory;

/** How {@link RLockClient#create(String, RLockOptions)} connects; every setter returns this. */
public final class RLockOptions {
    SSLSocketFactory sslSocketFactory;
    boolean verifyHostname = true;
    Duration connectTimeout = Duration.ofSeconds(5);
    Duration responseTimeout = Duration.ofSeconds(10);
    int protocol = 3;
    Duration watchdogLease = Duration.ofSeconds(30);
    Confirm confirm = Confirm.auto();
    String masterName;
    java.util.List<String> sentinels = java.util.List.of();
    String sentinelUser;
    String sentinelPassword;
    NameMapper nameMapper = NameMapper.direct();

    /** For {@code rediss://}: the factory of TLS sockets (default: the JDK's default one). */
    public RLockOptions sslSocketFactory(SSLSocketFactory factory) {
        this.sslSocketFactory = factory;
        return this;
    }

    /** Whether TLS checks that the certificate names the host (default true). */
    public RLockOptions verifyHostname(boolean verify) {
        this.verifyHostname = verify;
        return this;
    }

    public RLockOptions connectTimeout(Duration timeout) {
        this.connectTimeout = timeout;
        return this;
    }

    /** How long a call waits for its reply before the connection counts as broken (default 10 s). */
    public RLockOptions responseTimeout(Duration timeout) {
        this.responseTimeout = timeout;
        return this;
    }

    /** 3 (default): RESP3, RESP2 where {@code HELLO 3} is refused; 2: RESP2 only. */
    public RLockOptions protocol(int protocol) {
        if (protocol != 2 && protocol != 3) {
            throw new IllegalArgumentException("protocol 2 or 3");
        }
        this.protocol = protocol;
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
     * Connect through Redis Sentinel: {@code masterName} as the sentinels at {@code sentinels}
     * ({@code host:port}) name its primary, following its failovers; for
     * {@link RLockClient#create(RLockOptions)} (the URI form: {@code redis-sentinel://h1:p1,h2:p2/mastername}).
     */
    public RLockOptions sentinel(String masterName, String... sentinels) {
        this.masterName = masterName;
        this.sentinels = java.util.List.of(sentinels);
        return this;
    }

    /**
     * The sentinels' own credentials (Redisson's {@code sentinelUsername}/{@code sentinelPassword}):
     * {@code user} null for the {@code default} user. Without them the sentinels are asked
     * without {@code AUTH}; the URI's password is the data nodes'.
     */
    public RLockOptions sentinelAuth(String user, String password) {
        this.sentinelUser = user;
        this.sentinelPassword = password;
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
        copy.sslSocketFactory = sslSocketFactory;
        copy.verifyHostname = verifyHostname;
        copy.connectTimeout = connectTimeout;
        copy.responseTimeout = responseTimeout;
        copy.protocol = protocol;
        copy.watchdogLease = watchdogLease;
        copy.confirm = confirm;
        copy.masterName = masterName;
        copy.sentinels = sentinels;
        copy.sentinelUser = sentinelUser;
        copy.sentinelPassword = sentinelPassword;
        copy.nameMapper = nameMapper;
        return copy;
    }

    // What the client reads back.

    /** The value set by {@link #sslSocketFactory(SSLSocketFactory)} (or its default). */
    public SSLSocketFactory sslSocketFactory() {
        return sslSocketFactory;
    }

    /** The value set by {@link #verifyHostname(boolean)} (or its default). */
    public boolean verifyHostname() {
        return verifyHostname;
    }

    /** The value set by {@link #connectTimeout(Duration)} (or its default). */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /** The value set by {@link #responseTimeout(Duration)} (or its default). */
    public Duration responseTimeout() {
        return responseTimeout;
    }

    /** The value set by {@link #protocol(int)} (or its default). */
    public int protocol() {
        return protocol;
    }

    /** The value set by {@link #watchdogLease(Duration)} (or its default). */
    public Duration watchdogLease() {
        return watchdogLease;
    }

    /** The value set by {@link #confirm(Confirm)} (or its default). */
    public Confirm confirm() {
        return confirm;
    }

    /** The value set by {@link #sentinelUser(String)} (or its default). */
    public String sentinelUser() {
        return sentinelUser;
    }

    /** The value set by {@link #sentinelPassword(String)} (or its default). */
    public String sentinelPassword() {
        return sentinelPassword;
    }

    /** The value set by {@link #nameMapper(NameMapper)} (or its default). */
    public NameMapper nameMapper() {
        return nameMapper;
    }
}
