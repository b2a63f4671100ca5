package io.rlock.lettuce;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.rlock.internal.transport.AwaitingConnection;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.Push;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One engine session's connection over Lettuce: a dedicated Pub/Sub connection of the user's
 * client, which under RESP3 runs commands and receives the {@code __rlock__:<id>} messages on
 * the same socket (measured: {@code RLOCK.ACQUIRE ... WAIT 0 NOTIFY} answered {@code WAITING}
 * on it and the grant arrived as its message). It is never shared with the user's own commands,
 * so the server's watchdog binding is this connection's alone. When Lettuce reports it
 * disconnected, it is closed for good (no silent auto-reconnect, which would drop the binding
 * behind the engine's back) and the engine opens a new session, re-binding its holdings.
 */
final class LettuceConnection extends AwaitingConnection {
    private final StatefulRedisPubSubConnection<byte[], byte[]> connection;
    private final Connection.Listener listener;
    private final AtomicBoolean closed = new AtomicBoolean();

    LettuceConnection(StatefulRedisPubSubConnection<byte[], byte[]> connection, Connection.Listener listener,
            String host, int port, Duration timeout) {
        super(host, port, timeout);
        this.connection = connection;
        this.listener = listener;
        connection.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(byte[] channel, byte[] message) {
                listener.push(LettuceConnection.this, new Push(List.of("message", channel, message)));
            }

            @Override
            public void message(byte[] pattern, byte[] channel, byte[] message) {
                listener.push(LettuceConnection.this, new Push(List.of("pmessage", pattern, channel, message)));
            }
        });
    }

    /** Reads the connection's id and names it, as the engine's own connections are named. */
    void start(String clientName) throws IOException {
        identify(clientName);
    }

    @Override
    public int protocol() {
        return 3;
    }

    @Override
    public boolean isOpen() {
        return !closed.get() && connection.isOpen();
    }

    @Override
    public List<Object> pipeline(Object[]... commands) throws IOException {
        if (!isOpen()) {
            throw new IOException("the connection to " + host + ":" + port + " is closed");
        }
        List<RedisFuture<Object>> sent = new ArrayList<>(commands.length);
        writing();
        for (Object[] command : commands) {
            sent.add(RawCommands.dispatch(connection.async(), command));
        }
        return awaitReplies(sent);
    }

    @Override
    public CompletionStage<List<Object>> send(Object[]... commands) {
        if (!isOpen()) {
            return null;
        }
        writing();
        if (commands.length == 1) { // a waiting ACQUIRE, a grant's RENEW: its reply alone
            return RawCommands.dispatch(connection.async(), commands[0]).thenApply(java.util.Collections::singletonList);
        }
        CompletableFuture<?>[] sent = new CompletableFuture<?>[commands.length];
        for (int i = 0; i < commands.length; i++) {
            sent[i] = RawCommands.dispatch(connection.async(), commands[i]).toCompletableFuture();
        }
        return CompletableFuture.allOf(sent).thenApply(done -> {
            List<Object> replies = new ArrayList<>(sent.length);
            for (CompletableFuture<?> reply : sent) {
                replies.add(reply.join());
            }
            return replies;
        });
    }

    @Override
    public void subscribe(String channel) throws IOException {
        awaitConfirmation("SUBSCRIBE " + channel, connection.async().subscribe(channel.getBytes(StandardCharsets.UTF_8)));
    }

    @Override
    public void unsubscribe(String channel) throws IOException {
        awaitConfirmation("UNSUBSCRIBE " + channel, connection.async().unsubscribe(channel.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * Lettuce saw the socket drop (on its event loop thread): closed for good at once, so no
     * call goes to it any more, and the engine told once on a thread of its own. The engine's
     * handling waits for the node's lock, whose holder may be opening a new session through
     * this very event loop (seen: FailureTest hung in {@code connectPubSub} while the loop
     * waited for the lock).
     */
    void disconnected() {
        IOException cause = new IOException("the connection to " + host + ":" + port + " dropped");
        if (closed.compareAndSet(false, true)) {
            connection.closeAsync();
            Thread telling = new Thread(() -> listener.closed(this, cause), "rlock-lettuce-disconnected");
            telling.setDaemon(true);
            telling.start();
        }
    }

    @Override
    protected void close(IOException cause) {
        if (closed.compareAndSet(false, true)) {
            connection.closeAsync();
            listener.closed(this, cause);
        }
    }

    boolean isConnection(Object handler) {
        return handler == connection;
    }

    @Override
    public String toString() {
        return "lettuce:" + host + ":" + port + "#" + clientId();
    }
}
