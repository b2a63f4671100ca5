package io.rlock.lettuce;

import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.SessionSettings;
import java.io.IOException;
import java.net.SocketAddress;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Opens the engine's session connections through a Lettuce {@link RedisClient}: each is a
 * dedicated Pub/Sub connection (RESP3: calls and {@code __rlock__} messages on one socket) to one
 * node, made with the user's URI settings (credentials, TLS, database, timeouts). When Lettuce
 * reports it disconnected it is closed for good, so the engine opens a new session and re-binds
 * the holdings (or reports them lost) instead of Lettuce reconnecting it silently.
 */
final class LettuceSessions implements RedisConnectionStateListener {
    private final RedisClient client;
    private final RedisURI base;
    private final Set<LettuceConnection> live = ConcurrentHashMap.newKeySet();

    LettuceSessions(RedisClient client, RedisURI base) {
        this.client = client;
        this.base = base;
        client.addListener(this);
    }

    Connection open(SessionSettings settings) throws IOException {
        NodeAddress node = settings.node();
        StatefulRedisPubSubConnection<byte[], byte[]> connection;
        // Lettuce's connect gives up at once on an interrupted thread; the engine opens a session
        // for an interrupted waiter too (to withdraw its wait), so the interrupt waits until after.
        boolean interrupted = Thread.interrupted();
        try {
            connection = client.connectPubSub(ByteArrayCodec.INSTANCE, uriOf(base, node));
        } catch (RedisException e) {
            throw new IOException("cannot connect through Lettuce to " + node + ": " + withRootCause(e), e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        Connection.Listener told = settings.listener();
        LettuceConnection opened = new LettuceConnection(connection, new Connection.Listener() {
            @Override
            public void push(Connection from, Push push) {
                told.push(from, push);
            }

            @Override
            public void closed(Connection from, IOException cause) {
                live.remove(from);
                told.closed(from, cause);
            }
        }, node.host(), node.port(), settings.responseTimeout());
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
     * {@code base}'s settings for {@code node}: {@code base} itself when it names that node;
     * otherwise a plain URI to the node (never a Sentinel URI, which Lettuce would resolve again
     * to whatever primary the sentinels name at that instant) with {@code base}'s credentials,
     * TLS, database and timeout.
     */
    static RedisURI uriOf(RedisURI base, NodeAddress node) {
        if (base.getHost() != null && base.getSentinels().isEmpty() && base.getHost().equals(node.host())
                && base.getPort() == node.port()) {
            return base;
        }
        RedisURI.Builder uri = RedisURI.builder().withHost(node.host()).withPort(node.port())
                .withDatabase(base.getDatabase()).withTimeout(base.getTimeout())
                .withSsl(base.isSsl()).withStartTls(base.isStartTls()).withVerifyPeer(base.getVerifyMode());
        if (base.getCredentialsProvider() != null) {
            uri.withAuthentication(base.getCredentialsProvider());
        }
        return uri.build();
    }

    /**
     * Lettuce's message and, when it differs, its innermost cause's: "Unable to connect" alone
     * hides the server's reason (WRONGPASS, NOAUTH, NOPERM).
     */
    private static String withRootCause(Throwable failure) {
        Throwable root = failure;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == failure ? failure.getMessage() : failure.getMessage() + " (" + root.getMessage() + ")";
    }

    /** The engine closed: our listener leaves the user's client. */
    void close() {
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
