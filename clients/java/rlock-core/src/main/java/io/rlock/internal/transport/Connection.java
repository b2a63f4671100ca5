package io.rlock.internal.transport;

import java.io.IOException;
import java.util.List;

/**
 * One dedicated connection to one server, as the engine uses it: calls in order, pipelines,
 * {@code SUBSCRIBE} on the same connection (RESP3: the {@code __rlock__:<client id>} messages
 * arrive beside the replies), and a {@link Listener} told of pushes and of the close. Replies
 * are the engine's value model: {@code byte[]} (bulk), {@code String} (status), {@code Long},
 * {@code Double}, {@code Boolean}, {@code List}, {@code Map}, {@code null}, and
 * {@link io.rlock.internal.transport.RespError} for an error reply (returned, not thrown).
 *
 * <p>A {@link Transport} opens them: rlock-lettuce's is a dedicated Lettuce Pub/Sub connection
 * of the user's client.
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
    default Object callAsking(Object... args) throws IOException {
        List<Object> replies = pipeline(new Object[] {"ASKING"}, args);
        return replies.get(0) instanceof RespError ? replies.get(0) : replies.get(1);
    }

    /** Several commands written at once, their replies in order. */
    List<Object> pipeline(Object[]... commands) throws IOException;

    /**
     * Several commands written now, without waiting for their replies: a stage completed with the
     * replies in order (on the connection's I/O thread), or completed exceptionally when the
     * connection failed first. Never blocks, so the I/O thread may call it from a {@link Listener}
     * (a grant's confirmation, written as its message is read). Null when this connection cannot
     * (the default, or closed): the caller then calls as usual.
     */
    default java.util.concurrent.CompletionStage<List<Object>> send(Object[]... commands) {
        return null;
    }

    void subscribe(String channel) throws IOException;

    void unsubscribe(String channel) throws IOException;

    @Override
    void close();
}
