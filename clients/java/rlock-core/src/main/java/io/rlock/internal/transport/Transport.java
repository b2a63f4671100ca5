package io.rlock.internal.transport;

import java.io.IOException;
import java.util.List;

/**
 * What a transport (rlock-lettuce over a Lettuce client, rlock-redisson, rlock-spring-data, ...)
 * gives the engine: dedicated session connections, and the addressing of the user's client.
 * The engine never computes a slot nor asks a sentinel: it asks the transport, whose client
 * knows the topology (Lettuce's {@code Partitions}, Redisson's connection manager, Jedis's
 * cluster cache, the primary a Sentinel-aware client follows).
 *
 * <p>The engine keeps the rest: one {@code Node} per {@link NodeAddress} with its session, the
 * re-bind of watchdog holdings after a session drops or a primary moves, and the retry policy.
 * After a call on a node failed in a way a topology change explains (the connection closed,
 * {@code READONLY}, {@code MOVED}, {@code CLUSTERDOWN}, {@code TRYAGAIN}), it calls
 * {@link #refresh()} and then {@link #nodeFor} again ("the node for this key now"), until the
 * node answers as a primary or its failover deadline passes.
 *
 * <p>Thread-safe: any engine thread may call any method; {@link #refresh()} may block for up to
 * about a connect timeout.
 */
public interface Transport {
    /** How the user's client addresses the data: it decides whether the engine follows failovers. */
    enum Topology {
        /** One server; a failed call is retried on a new session to it, never elsewhere. */
        STANDALONE,
        /** The primary a Sentinel-aware client follows; {@link #refresh()} asks the sentinels. */
        SENTINEL,
        /** Redis Cluster; {@link #nodeFor} is the key's slot's master in the client's slot map. */
        CLUSTER
    }

    Topology topology();

    /** The database the sessions use (the keyspace-notification channels name it); 0 in a cluster. */
    int database();

    /** The node {@code key}'s calls go to now, as the client's current view says; never null. */
    NodeAddress nodeFor(String key);

    /** Every primary holding data now, each once (standalone and Sentinel: the one primary). */
    List<NodeAddress> primaries();

    /**
     * Re-reads the topology from the user's client now (Sentinel: the primary the sentinels
     * name; Cluster: the slot map), so that {@link #nodeFor} and {@link #primaries} tell the
     * state after a failover. False when it could not be read now (the engine tries again).
     * Standalone: true, nothing to read.
     */
    boolean refresh();

    /**
     * Opens one dedicated connection to {@code settings.node()}, never shared with the user's own
     * commands nor returned to a pool: the server binds watchdog holdings to it. Under RESP3 it
     * carries the calls and the {@code __rlock__} messages ({@link Connection#protocol()} 3);
     * closed by the server or the client, it reports {@link Connection.Listener#closed} once and
     * stays closed (a silent reconnect would drop the bindings behind the engine's back).
     *
     * @throws RespServerException the server refused a step of the handshake (credentials, ACL)
     * @throws IOException it could not be reached
     */
    Connection open(SessionSettings settings) throws IOException;

    /** The engine closed: let go of what the transport holds in the user's client (listeners); never close that client. */
    default void close() {
    }
}
