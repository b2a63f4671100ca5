package io.rlock.lettuce;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.sentinel.api.StatefulRedisSentinelConnection;
import io.rlock.RLockException;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.SessionSettings;
import io.rlock.internal.transport.Transport;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;

/**
 * The transport over a Lettuce {@link RedisClient} and one {@link RedisURI}: a standalone server,
 * or a Sentinel URI, whose primary is the one Lettuce's sentinel connection names
 * ({@code getMasterAddrByName}) when the engine asks after a failure.
 */
final class ServerTransport implements Transport {
    private final RedisClient client;
    private final RedisURI uri;
    private final LettuceSessions sessions;
    private volatile NodeAddress primary;
    /** Sentinel: the connection the primary is asked on (Lettuce reconnects it), or null. */
    private StatefulRedisSentinelConnection<String, String> sentinel;
    /** Sentinel: why the last refresh could not ask a sentinel, or null. */
    private RedisException lastFailure;

    ServerTransport(RedisClient client, RedisURI uri) {
        this.client = client;
        this.uri = uri;
        if (isSentinel()) {
            if (!refresh()) {
                // Why: a sentinel that wants a password of its own answers NOAUTH, which says what to set.
                throw new RLockException("SENTINEL", "no sentinel of " + uri + " names a primary for " + uri.getSentinelMasterId()
                        + (lastFailure == null ? "" : " (last: " + reasons(lastFailure) + ")"));
            }
        } else {
            primary = new NodeAddress(uri.getHost(), uri.getPort());
        }
        this.sessions = new LettuceSessions(client, uri);
    }

    private boolean isSentinel() {
        return !uri.getSentinels().isEmpty();
    }

    @Override
    public Topology topology() {
        return isSentinel() ? Topology.SENTINEL : Topology.STANDALONE;
    }

    @Override
    public int database() {
        return uri.getDatabase();
    }

    @Override
    public NodeAddress nodeFor(String key) {
        return primary;
    }

    @Override
    public List<NodeAddress> primaries() {
        return List.of(primary);
    }

    @Override
    public synchronized boolean refresh() {
        if (!isSentinel()) {
            return true;
        }
        try {
            if (sentinel == null || !sentinel.isOpen()) {
                closeSentinel();
                sentinel = client.connectSentinel(uri);
            }
            SocketAddress named = sentinel.sync().getMasterAddrByName(uri.getSentinelMasterId());
            if (!(named instanceof InetSocketAddress address)) {
                return false;
            }
            primary = new NodeAddress(address.getHostString(), address.getPort());
            lastFailure = null;
            return true;
        } catch (RedisException e) {
            lastFailure = e;
            closeSentinel(); // the next refresh asks another sentinel
            return false;
        }
    }

    /** The messages of {@code e} and its causes (Lettuce's connect failure wraps the server's reply). */
    private static String reasons(Throwable e) {
        StringBuilder reasons = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable cause = e.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
            reasons.append(": ").append(cause.getMessage());
        }
        return reasons.toString();
    }

    private void closeSentinel() {
        if (sentinel != null) {
            sentinel.closeAsync();
            sentinel = null;
        }
    }

    @Override
    public Connection open(SessionSettings settings) throws IOException {
        return sessions.open(settings);
    }

    @Override
    public synchronized void close() {
        closeSentinel();
        sessions.close();
    }

    @Override
    public String toString() {
        return "lettuce " + uri;
    }
}
