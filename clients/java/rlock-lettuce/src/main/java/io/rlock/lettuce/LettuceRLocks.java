package io.rlock.lettuce;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.rlock.RLockClient;
import io.rlock.RLockException;
import io.rlock.RLockOptions;
import io.rlock.internal.Clients;
import io.rlock.internal.transport.Transport;

/**
 * rlock's locks over the user's own Lettuce {@link RedisClient}: {@code LettuceRLocks.of(client, uri)}
 * gives an {@link RLockClient} (every type of the API) whose sessions are dedicated Pub/Sub
 * connections that {@code client} opens to {@code uri}, with its credentials, TLS, database,
 * timeouts and resources. The user's own connections are not touched; closing the RLockClient
 * closes only its sessions, never {@code client}.
 *
 * <p>Standalone servers, and Sentinel URIs ({@code RedisURI.Builder.sentinel(...)}): each session
 * opens to the primary the sentinels name; after a failover the new session re-binds the
 * holdings there. {@code RedisClusterClient}: see {@link #of(RedisClusterClient, RedisURI)}.
 */
public final class LettuceRLocks {
    private LettuceRLocks() {
    }

    /** An RLockClient over {@code client}'s connections to {@code uri}, with the default options. */
    public static RLockClient of(RedisClient client, RedisURI uri) {
        return of(client, uri, new RLockOptions());
    }

    /**
     * As above; {@code options} gives the watchdog lease, confirmation by the replicas, the name
     * mapper and the response timeout (the engine's; Lettuce's own timeouts still apply to the
     * connect). Connection settings in {@code options} (TLS factory, protocol) are Lettuce's here.
     *
     * @throws RLockException when the server cannot be reached or has no rlock module
     */
    public static RLockClient of(RedisClient client, RedisURI uri, RLockOptions options) {
        if (client == null || uri == null || options == null) {
            throw new IllegalArgumentException("a RedisClient, a RedisURI and options, not null");
        }
        return create(options, new ServerTransport(client, uri));
    }

    /**
     * An RLockClient over a Redis Cluster that {@code cluster} is configured for, {@code seed}
     * being any of its masters: the sessions, one per master, are dedicated connections opened
     * with {@code cluster}'s resources and options and {@code seed}'s credentials and TLS to each
     * node the slot map names (each key goes to its slot's master in Lettuce's partitions, read
     * again after a {@code MOVED} or a failover). Closing it closes only its own connections.
     */
    public static RLockClient of(RedisClusterClient cluster, RedisURI seed) {
        return of(cluster, seed, new RLockOptions());
    }

    public static RLockClient of(RedisClusterClient cluster, RedisURI seed, RLockOptions options) {
        if (cluster == null || seed == null || options == null) {
            throw new IllegalArgumentException("a RedisClusterClient, a seed RedisURI and options, not null");
        }
        return create(options, new ClusterTransport(cluster, seed));
    }

    /** The client over {@code transport}; a failure to connect closes the transport too. */
    private static RLockClient create(RLockOptions options, Transport transport) {
        try {
            return Clients.create(options, transport);
        } catch (RuntimeException e) {
            transport.close();
            throw e;
        }
    }
}
