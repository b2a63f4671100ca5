package io.rlock.internal.transport;

import io.rlock.internal.resp.Push;
import java.io.IOException;
import java.util.List;

/**
 * One dedicated connection to one server, as the engine uses it: calls in order, pipelines,
 * {@code SUBSCRIBE} on the same connection (RESP3: the {@code __rlock__:<client id>} messages
 * arrive beside the replies), and a {@link Listener} told of pushes and of the close. Replies
 * are the engine's value model: {@code byte[]} (bulk), {@code String} (status), {@code Long},
 * {@code Double}, {@code Boolean}, {@code List}, {@code Map}, {@code null}, and
 * {@link io.rlock.internal.resp.RespError} for an error reply (returned, not thrown).
 *
 * <p>Implementations: {@link io.rlock.internal.resp.RespConnection} (the engine's own), and a
 * transport module's over the user's client (rlock-lettuce: a Lettuce Pub/Sub connection).
 */
public interface Connection extends AutoCloseable {
    /** What a connection reports besides replies. Called from its I/O thread: be quick. */
    interface Listener {
        /** A push, or a RESP2 subscriber's {@code message}. */
        default void push(Connection connection, Push push) {
        }

        /** The connection is closed (by {@link #close()}, the server, a timeout); called once. */
        default void closed(Connection connection, IOException cause) {
        }
    }

    /** 3 (RESP3: one connection carries calls and messages) or 2 (a subscriber needs its own). */
    int protocol();

    /** The server's {@code CLIENT ID} of this connection. */
    long clientId();

    String host();

    int port();

    boolean isOpen();

    /** When a command was last written (System.nanoTime()), for keep-alive {@code PING}s. */
    long lastWriteNanos();

    /** One command; an error reply is returned as a RespError. A broken connection: IOException. */
    Object call(Object... args) throws IOException;

    /** {@code ASKING} then {@code args} (a Redis Cluster {@code ASK} redirection): the second reply. */
    Object callAsking(Object... args) throws IOException;

    /** Several commands written at once, their replies in order. */
    List<Object> pipeline(Object[]... commands) throws IOException;

    void subscribe(String channel) throws IOException;

    void unsubscribe(String channel) throws IOException;

    @Override
    void close();
}
