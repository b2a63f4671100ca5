package io.rlock.jedis;

import io.rlock.internal.resp.RespConnection;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.Connector;
import java.io.IOException;
import java.util.List;
import java.util.function.Supplier;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/**
 * Opens the engine's connections with Jedis: to the node the engine names (standalone, cluster
 * nodes), or, under Sentinel, to the primary that Jedis's own sentinel pool currently names. A
 * session opened under Sentinel is checked with {@code ROLE}: until the pool has heard of a
 * failover it may still name the demoted node, and a session there is refused (the engine tries
 * again) rather than bound to a replica.
 */
class JedisConnector implements Connector {
    private final JedisClientConfig config;
    /** The primary under Sentinel (Jedis's pool), or null: the node the engine names. */
    private final Supplier<HostAndPort> primary;

    JedisConnector(JedisClientConfig config, Supplier<HostAndPort> primary) {
        this.config = config;
        this.primary = primary;
    }

    @Override
    public Connection open(RespConnection.Settings settings) throws IOException {
        HostAndPort node = primary != null ? primary.get() : new HostAndPort(settings.host(), settings.port());
        if (node == null) {
            throw new IOException("Jedis's sentinel pool names no primary");
        }
        Connection opened = JedisSessionConnection.open(node, new SessionConfig(config, settings.clientName()),
                settings.listener(), settings.host(), settings.port(), settings.responseTimeout());
        if (primary != null) {
            try {
                Object role = opened.call("ROLE");
                if (!(role instanceof List<?> parts) || parts.isEmpty() || !"master".equals(parts.get(0))) {
                    throw new IOException(node + " is not the primary (yet): ROLE " + role);
                }
            } catch (IOException e) {
                opened.close();
                throw e;
            }
        }
        return opened;
    }
}
