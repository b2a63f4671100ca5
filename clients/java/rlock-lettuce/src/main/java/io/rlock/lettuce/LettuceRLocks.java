package io.rlock.lettuce;

import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
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
 * <p>Standalone servers. A Sentinel URI ({@code RedisURI.Builder.sentinel(...)}) connects each
 * session to the primary the sentinels name when it opens; failovers through it and
 * {@code RedisClusterClient} are not supported yet (use {@code RLockClient.create} with a
 * {@code redis-sentinel://} URI or a cluster seed meanwhile).
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
    static final class LettuceConnector implements Connector, RedisConnectionStateListener {
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
                connection = client.connectPubSub(ByteArrayCodec.INSTANCE, uri);
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
