package io.rlock.lettuce;

import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.rlock.RLockClient;
import io.rlock.RLockException;
import io.rlock.RLockOptions;
import io.rlock.internal.Clients;
import io.rlock.internal.resp.RedisUri;
import io.rlock.internal.resp.RespConnection;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.Connector;
import java.io.IOException;
import java.net.SocketAddress;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * rlock's locks over the user's own Lettuce {@link RedisClient}: {@code LettuceRLocks.of(client, uri)}
 * gives an {@link RLockClient} (every type of the API) whose sessions are dedicated Pub/Sub
 * connections that {@code client} opens to {@code uri}, with its credentials, TLS, database,
 * timeouts and resources. The user's own connections are not touched; closing the RLockClient
 * closes only its sessions, never {@code client}.
 *
 * <p>Standalone servers, and Sentinel URIs ({@code RedisURI.Builder.sentinel(...)}): each session
 * opens to the primary the sentinels name; after a failover the new session re-binds the
 * holdings there. {@code RedisClusterClient} is not supported yet (use {@code RLockClient.create}
 * with a cluster seed meanwhile).
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
        RedisUri where = RedisUri.parse("redis://" + hostOf(uri) + ":" + portOf(uri) + "/" + uri.getDatabase());
        return Clients.create(where, options, new LettuceConnector(client, uri));
    }

    /**
     * An RLockClient over a Redis Cluster that {@code cluster} is configured for, {@code seed}
     * being any of its masters: the sessions, one per master, are dedicated connections opened
     * with {@code cluster}'s resources and options and {@code seed}'s credentials and TLS to each
     * node the slot map names (the engine routes each key to its slot's master, following
     * {@code MOVED}/{@code ASK} and failovers). Closing it closes only its own connections.
     */
    public static RLockClient of(RedisClusterClient cluster, RedisURI seed) {
        return of(cluster, seed, new RLockOptions());
    }

    public static RLockClient of(RedisClusterClient cluster, RedisURI seed, RLockOptions options) {
        if (cluster == null || seed == null || options == null) {
            throw new IllegalArgumentException("a RedisClusterClient, a seed RedisURI and options, not null");
        }
        RedisClient nodes = RedisClient.create(cluster.getResources());
        nodes.setOptions(cluster.getOptions());
        try {
            RedisUri where = RedisUri.parse("redis://" + hostOf(seed) + ":" + portOf(seed));
            return Clients.create(where, options, new LettuceConnector(nodes, seed) {
                @Override
                public void close() {
                    super.close();
                    nodes.shutdownAsync();
                }
            });
        } catch (RuntimeException e) {
            nodes.shutdownAsync();
            throw e;
        }
    }

    private static String hostOf(RedisURI uri) {
        String host = uri.getHost();
        if (host != null) {
            return host.contains(":") ? "[" + host + "]" : host;
        }
        return "sentinel-" + uri.getSentinelMasterId();
    }

    private static int portOf(RedisURI uri) {
        return uri.getHost() != null ? uri.getPort() : 6379;
    }

    /** Opens the engine's connections through the user's client, and closes them when Lettuce sees them drop. */
    static class LettuceConnector implements Connector, RedisConnectionStateListener {
        private final RedisClient client;
        private final RedisURI uri;
        private final Set<LettuceConnection> live = ConcurrentHashMap.newKeySet();

        LettuceConnector(RedisClient client, RedisURI uri) {
            this.client = client;
            this.uri = uri;
            client.addListener(this);
        }

        @Override
        public Connection open(RespConnection.Settings settings) throws IOException {
            StatefulRedisPubSubConnection<byte[], byte[]> connection;
            try {
                connection = client.connectPubSub(ByteArrayCodec.INSTANCE, target(settings));
            } catch (RedisException e) {
                throw new IOException("cannot connect through Lettuce to " + uri + ": " + e.getMessage(), e);
            }
            Connection.Listener told = settings.listener();
            LettuceConnection opened = new LettuceConnection(connection, new Connection.Listener() {
                @Override
                public void push(Connection from, io.rlock.internal.resp.Push push) {
                    told.push(from, push);
                }

                @Override
                public void closed(Connection from, IOException cause) {
                    live.remove(from);
                    told.closed(from, cause);
                }
            }, settings.host(), settings.port(), settings.responseTimeout());
            live.add(opened);
            try {
                opened.start(settings.clientName());
            } catch (IOException | RuntimeException e) {
                opened.close();
                throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
            }
            return opened;
        }

        /**
         * {@code uri} itself for the node it names (or for every node under Sentinel, where the
         * sentinels name the primary); another node of a cluster: the same settings, its address.
         */
        private RedisURI target(RespConnection.Settings settings) {
            if (uri.getHost() == null || (uri.getHost().equals(settings.host()) && uri.getPort() == settings.port())) {
                return uri;
            }
            return RedisURI.builder(uri).withHost(settings.host()).withPort(settings.port()).build();
        }

        @Override
        public void close() {
            client.removeListener(this);
        }

        @Override
        public void onRedisConnected(RedisChannelHandler<?, ?> connection, SocketAddress socketAddress) {
        }

        @Override
        public void onRedisDisconnected(RedisChannelHandler<?, ?> connection) {
            for (LettuceConnection ours : live) {
                if (ours.isConnection(connection)) {
                    ours.disconnected();
                }
            }
        }

        @Override
        public void onRedisExceptionCaught(RedisChannelHandler<?, ?> connection, Throwable cause) {
        }
    }
}
