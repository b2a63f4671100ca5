package io.rlock.internal.transport;

import io.rlock.internal.resp.RespConnection;
import java.io.IOException;

/**
 * Opens the engine's dedicated connections: {@code settings} names the node (host, port), the
 * listener, the timeouts and the client name. The engine's own is {@link RespConnection#open};
 * a transport module gives one over the user's client.
 */
@FunctionalInterface
public interface Connector {
    Connection open(RespConnection.Settings settings) throws IOException;

    /** The engine closed: let go of what the connector holds in the user's client (listeners). */
    default void close() {
    }
}
