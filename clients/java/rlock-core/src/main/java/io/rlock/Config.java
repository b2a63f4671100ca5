package io.rlock;

import io.rlock.internal.*;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import io.rlock.internal.resp.RedisUri;

/**
 * Redisson's {@code Config}, reduced to what this client has: for code that configures Redisson
 * ({@code RLockClient.create(config)} where it called {@code Redisson.create(config)}), and what
 * {@link RLockClient#getConfig()} hands back. One server mode ({@link #useSingleServer()},
 * {@link #useClusterServers()} or {@link #useSentinelServers()}); each setter does what
 * Redisson's does, onto {@link RLockOptions}. Redisson's connection pool settings have no
 * counterpart (one connection per node) and are not offered.
 */
public final class Config {
    /** What has no Redisson setter (TLS socket factory, protocol, confirmation) carries over in here. */
    final RLockOptions options;
    private SingleServerConfig single;
    private ClusterServersConfig cluster;
    private SentinelServersConfig sentinel;

    public Config() {
        this(new RLockOptions());
    }

    /** A copy of {@code config}, as Redisson's {@code new Config(config)}. */
    public Config(Config config) {
        this(config.options.copy());
        single = config.single == null ? null : config.single.copyInto(new SingleServerConfig());
        cluster = config.cluster == null ? null : config.cluster.copyInto(new ClusterServersConfig());
        sentinel = config.sentinel == null ? null : config.sentinel.copyInto(new SentinelServersConfig());
    }

    private Config(RLockOptions options) {
        this.options = options;
    }

    /** What a client made from {@code uri} and {@code options} would be given as (its {@code getConfig()}). */
    static Config of(RedisUri uri, RLockOptions options, boolean cluster) {
        Config config = new Config(options.copy());
        ServerConfig<?> server;
        if (uri.masterName != null) {
            SentinelServersConfig sentinels = config.useSentinelServers().setMasterName(uri.masterName)
                    .setSentinelUsername(options.sentinelUser).setSentinelPassword(options.sentinelPassword);
            uri.sentinels.forEach(address -> sentinels.addSentinelAddress((uri.tls ? "rediss://" : "redis://") + address));
            server = sentinels.setDatabase(uri.db);
        } else if (cluster) {
            server = config.useClusterServers().addNodeAddress(uri.address());
        } else {
            server = config.useSingleServer().setAddress(uri.address()).setDatabase(uri.db);
        }
        server.setUsername(uri.user).setPassword(uri.password).setNameMapper(options.nameMapper)
                .setConnectTimeout((int) options.connectTimeout.toMillis())
                .setTimeout((int) options.responseTimeout.toMillis());
        return config;
    }

    public SingleServerConfig useSingleServer() {
        if (single == null) {
            notUsed(cluster, "cluster");
            notUsed(sentinel, "sentinel");
            single = new SingleServerConfig();
        }
        return single;
    }

    public ClusterServersConfig useClusterServers() {
        if (cluster == null) {
            notUsed(single, "single server");
            notUsed(sentinel, "sentinel");
            cluster = new ClusterServersConfig();
        }
        return cluster;
    }

    public SentinelServersConfig useSentinelServers() {
        if (sentinel == null) {
            notUsed(single, "single server");
            notUsed(cluster, "cluster");
            sentinel = new SentinelServersConfig();
        }
        return sentinel;
    }

    private static void notUsed(Object mode, String name) {
        if (mode != null) {
            throw new IllegalStateException(name + " config already used!");
        }
    }

    /** The lease of a holding taken without a lease time, renewed by the server's watchdog ({@link RLockOptions#watchdogLease}). */
    public Config setLockWatchdogTimeout(long ms) {
        options.watchdogLease(Duration.ofMillis(ms));
        return this;
    }

    public long getLockWatchdogTimeout() {
        return options.getLockWatchdogTimeout();
    }

    /**
     * How long the replicas have to confirm a write (Redisson's slaves synchronization:
     * {@link Confirm#timeout}; default 1000 ms as Redisson's).
     */
    public Config setSlavesSyncTimeout(long ms) {
        options.confirm(options.confirm.timeout(Duration.ofMillis(ms)));
        return this;
    }

    public long getSlavesSyncTimeout() {
        return options.confirm.timeoutMs;
    }

    /** The options of a client made from this configuration. */
    RLockOptions toOptions() {
        RLockOptions result = options.copy();
        ServerConfig<?> server = server();
        result.nameMapper(server.nameMapper).connectTimeout(Duration.ofMillis(server.connectTimeout))
                .responseTimeout(Duration.ofMillis(server.timeout));
        if (sentinel != null) {
            result.sentinelAuth(sentinel.sentinelUsername, sentinel.sentinelPassword);
        }
        return result;
    }

    /** The servers to try in turn: one, each cluster node given, or the sentinels as one. */
    List<RedisUri> uris() {
        ServerConfig<?> server = server();
        List<RedisUri> uris = new ArrayList<>();
        if (sentinel != null) {
            boolean tls = sentinel.addresses.stream().anyMatch(address -> address.startsWith("rediss://"));
            List<String> hostPorts = sentinel.addresses.stream().map(address -> RedisUri.parse(address).address()
                    .replaceFirst("^rediss?://", "")).toList();
            uris.add(RedisUri.sentinel(tls, sentinel.masterName, hostPorts, server.username, server.password, sentinel.database));
        } else if (cluster != null) {
            for (String address : cluster.addresses) {
                uris.add(RedisUri.parse(address).withAuth(server.username, server.password, 0));
            }
        } else if (single.address != null) {
            uris.add(RedisUri.parse(single.address).withAuth(server.username, server.password, single.database));
        }
        if (uris.isEmpty()) {
            throw new IllegalArgumentException("no server address in the config: useSingleServer().setAddress(...), "
                    + "useClusterServers().addNodeAddress(...) or useSentinelServers().addSentinelAddress(...)");
        }
        return uris;
    }

    private ServerConfig<?> server() {
        ServerConfig<?> server = single != null ? single : cluster != null ? cluster : sentinel;
        if (server == null) {
            throw new IllegalArgumentException("no server mode in the config: useSingleServer(), useClusterServers() or useSentinelServers()");
        }
        return server;
    }

    /** What every server mode has (Redisson's {@code BaseConfig}); setters return the mode's config. */
    public abstract static class ServerConfig<T extends ServerConfig<T>> {
        private NameMapper nameMapper = NameMapper.direct();
        private String username;
        private String password;
        private int connectTimeout = 5000;
        private int timeout = 10000;

        @SuppressWarnings("unchecked")
        private T self() {
            return (T) this;
        }

        /** Every object name becomes its key through {@code mapper} (see {@link NameMapper}). */
        public T setNameMapper(NameMapper mapper) {
            if (mapper == null) {
                throw new IllegalArgumentException("a NameMapper (NameMapper.direct() for none)");
            }
            this.nameMapper = mapper;
            return self();
        }

        public NameMapper getNameMapper() {
            return nameMapper;
        }

        /** The data nodes' ACL user (null: {@code default}). */
        public T setUsername(String username) {
            this.username = username;
            return self();
        }

        public T setPassword(String password) {
            this.password = password;
            return self();
        }

        /** Connecting to a node, in ms ({@link RLockOptions#connectTimeout}). */
        public T setConnectTimeout(int ms) {
            this.connectTimeout = positive(ms, "connect timeout");
            return self();
        }

        /** A reply, in ms ({@link RLockOptions#responseTimeout}). */
        public T setTimeout(int ms) {
            this.timeout = positive(ms, "timeout");
            return self();
        }

        static int positive(int ms, String what) {
            if (ms < 1) {
                throw new IllegalArgumentException("a " + what + " of at least 1 ms, not " + ms);
            }
            return ms;
        }

        <C extends ServerConfig<C>> C copyInto(C copy) {
            copy.setNameMapper(nameMapper).setUsername(username).setPassword(password)
                    .setConnectTimeout(connectTimeout).setTimeout(timeout);
            return copy;
        }
    }

    public static final class SingleServerConfig extends ServerConfig<SingleServerConfig> {
        private String address;
        private int database;

        /** {@code redis://host:port} or {@code rediss://host:port}. */
        public SingleServerConfig setAddress(String address) {
            RedisUri.parse(address);
            this.address = address;
            return this;
        }

        public String getAddress() {
            return address;
        }

        public SingleServerConfig setDatabase(int database) {
            this.database = database;
            return this;
        }

        public int getDatabase() {
            return database;
        }

        SingleServerConfig copyInto(SingleServerConfig copy) {
            super.copyInto(copy).setDatabase(database).address = address;
            return copy;
        }
    }

    public static final class ClusterServersConfig extends ServerConfig<ClusterServersConfig> {
        private final List<String> addresses = new ArrayList<>();

        /** Nodes to start from ({@code redis://host:port}): the first that answers; the others are found. */
        public ClusterServersConfig addNodeAddress(String... addresses) {
            for (String address : addresses) {
                RedisUri.parse(address);
                this.addresses.add(address);
            }
            return this;
        }

        public List<String> getNodeAddresses() {
            return List.copyOf(addresses);
        }

        ClusterServersConfig copyInto(ClusterServersConfig copy) {
            super.copyInto(copy).addresses.addAll(addresses);
            return copy;
        }
    }

    public static final class SentinelServersConfig extends ServerConfig<SentinelServersConfig> {
        private final List<String> addresses = new ArrayList<>();
        private String masterName;
        private String sentinelUsername;
        private String sentinelPassword;
        private int database;

        public SentinelServersConfig setMasterName(String masterName) {
            this.masterName = masterName;
            return this;
        }

        public String getMasterName() {
            return masterName;
        }

        /** Sentinels ({@code redis://host:port}). */
        public SentinelServersConfig addSentinelAddress(String... addresses) {
            for (String address : addresses) {
                RedisUri.parse(address);
                this.addresses.add(address);
            }
            return this;
        }

        public List<String> getSentinelAddresses() {
            return List.copyOf(addresses);
        }

        /** The sentinels' own credentials ({@link RLockOptions#sentinelAuth}). */
        public SentinelServersConfig setSentinelUsername(String username) {
            this.sentinelUsername = username;
            return this;
        }

        public SentinelServersConfig setSentinelPassword(String password) {
            this.sentinelPassword = password;
            return this;
        }

        public SentinelServersConfig setDatabase(int database) {
            this.database = database;
            return this;
        }

        SentinelServersConfig copyInto(SentinelServersConfig copy) {
            super.copyInto(copy).addresses.addAll(addresses);
            return copy.setMasterName(masterName).setSentinelUsername(sentinelUsername)
                    .setSentinelPassword(sentinelPassword).setDatabase(database);
        }
    }
}
