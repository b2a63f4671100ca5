package io.rlock.jedis;

import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.SessionSettings;
import io.rlock.internal.transport.Transport;
import java.io.IOException;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/**
 * What every Jedis transport shares: the sessions, each a dedicated Jedis connection made with the
 * user's {@link JedisClientConfig} to the node the engine asks for. The addressing (a node, the
 * primary a sentinel pool follows, a key's slot master) is each subclass's, read from Jedis.
 */
abstract class JedisTransport implements Transport {
    private final JedisClientConfig config;
    /** What the RLockClient made for itself in Jedis (a sentinel pool, a slot cache), closed with it; or null. */
    private final Runnable onClose;

    JedisTransport(JedisClientConfig config, Runnable onClose) {
        this.config = config;
        this.onClose = onClose;
    }

    @Override
    public void close() {
        if (onClose != null) {
            onClose.run();
        }
    }

    @Override
    public int database() {
        return config.getDatabase();
    }

    @Override
    public Connection open(SessionSettings settings) throws IOException {
        NodeAddress node = settings.node();
        return JedisSessionConnection.open(new HostAndPort(node.host(), node.port()),
                new SessionConfig(config, settings.clientName()), settings);
    }

    static NodeAddress addressOf(HostAndPort node) {
        return new NodeAddress(node.getHost(), node.getPort());
    }
}
