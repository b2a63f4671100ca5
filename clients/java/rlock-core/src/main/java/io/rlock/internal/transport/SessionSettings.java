package io.rlock.internal.transport;

import java.time.Duration;

/**
 * What the engine asks of one session connection: the node, the listener told of its pushes and
 * of its close, the name it gives it ({@code CLIENT SETNAME}, so operators see rlock's sessions)
 * and how long it waits for one reply. Credentials, TLS, the database and the protocol are the
 * user's client's.
 */
public record SessionSettings(NodeAddress node, Connection.Listener listener, String clientName, Duration responseTimeout) {
}
