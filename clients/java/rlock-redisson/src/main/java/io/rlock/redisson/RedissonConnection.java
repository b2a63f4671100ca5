package io.rlock.redisson;

import io.rlock.internal.transport.AwaitingConnection;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.Push;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.redisson.client.ChannelName;
import org.redisson.client.RedisPubSubConnection;
import org.redisson.client.RedisPubSubListener;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.client.codec.StringCodec;
import org.redisson.client.protocol.RedisCommand;
import org.redisson.client.protocol.pubsub.PubSubType;

/**
 * One engine session's connection over Redisson: a dedicated {@link RedisPubSubConnection}
 * opened by the Redisson {@code RedisClient} of the node (the user's Config: TLS, credentials,
 * timeouts, Netty event loop). It is in none of Redisson's pools, so Redisson's idle-connection
 * watcher never closes it and no Redisson command ever runs on it: the server's watchdog
 * binding is this connection's alone.
 *
 * <p>Redisson's {@code ConnectionWatchdog} reconnects a dropped connection on its own; a new
 * socket is not bound to the holdings, so when Redisson reports the connection disconnected it
 * is closed for good (Redisson then does not reconnect it) and the engine opens a new session,
 * which re-binds every watchdog holding or reports it lost.
 *
 * <p>Protocol 2: the engine opens a second one of these as its subscriber (Redisson decodes a
 * subscribed RESP2 connection's messages), and its grants are sent to that connection's id.
 */
final class RedissonConnection extends AwaitingConnection {
    private final RedisPubSubConnection connection;
    private final Connection.Listener listener;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Each subscribed channel's listener, which hands its messages to the engine. */
    private final Map<String, RedisPubSubListener<Object>> subscribed = new ConcurrentHashMap<>();

    RedissonConnection(RedisPubSubConnection connection, Connection.Listener listener, String host, int port, Duration timeout) {
        super(host, port, timeout);
        this.connection = connection;
        this.listener = listener;
        connection.setDisconnectedListener(() -> close(new IOException("the connection to " + host + ":" + port + " dropped")));
    }

    /** Reads the connection's id and names it, as the engine's own connections are named. */
    void start(String clientName) throws IOException {
        identify(clientName);
    }

    @Override
    public int protocol() {
        return 2;
    }

    @Override
    public boolean isOpen() {
        return !closed.get() && connection.isActive();
    }

    /** The commands written in order on the one channel, then their replies awaited in order. */
    @Override
    public List<Object> pipeline(Object[]... commands) throws IOException {
        if (!isOpen()) {
            throw new IOException("the connection to " + host + ":" + port + " is closed");
        }
        List<CompletableFuture<Object>> sent = new ArrayList<>(commands.length);
        writing();
        for (Object[] command : commands) {
            sent.add(connection.<Object, Object>async(timeout.toMillis(), StringCodec.INSTANCE,
                    new RedisCommand<>(String.valueOf(command[0])), arguments(command)).toCompletableFuture());
        }
        return awaitReplies(sent);
    }

    /** Redisson reports the server's error replies as failures: they are replies to the engine. */
    @Override
    protected Object failedReply(Throwable cause) throws IOException {
        Object error = ServerErrors.reply(cause);
        return error != null ? error : super.failedReply(cause);
    }

    /**
     * Subscribes and waits for the server's confirmation, which Redisson reports to the
     * channel's listener as a status (not by completing the command).
     */
    @Override
    public void subscribe(String channel) throws IOException {
        ChannelName name = new ChannelName(channel);
        CompletableFuture<Void> done = new CompletableFuture<>();
        RedisPubSubListener<Object> messages = new RedisPubSubListener<>() {
            @Override
            public void onMessage(CharSequence from, Object message) {
                listener.push(RedissonConnection.this, new Push(List.of("message", from.toString(), message)));
            }

            @Override
            public void onStatus(PubSubType type, CharSequence from) {
                if (type == PubSubType.SUBSCRIBE) {
                    done.complete(null);
                }
            }
        };
        RedisPubSubListener<Object> earlier = subscribed.put(channel, messages);
        if (earlier != null) {
            connection.removeListener(name, earlier);
        }
        connection.addListener(name, messages);
        writing();
        connection.subscribe(ByteArrayCodec.INSTANCE, name);
        awaitConfirmation("SUBSCRIBE " + channel, done);
    }

    @Override
    public void unsubscribe(String channel) throws IOException {
        ChannelName name = new ChannelName(channel);
        CompletableFuture<Void> done = new CompletableFuture<>();
        RedisPubSubListener<Object> confirmation = new RedisPubSubListener<>() {
            @Override
            public void onMessage(CharSequence from, Object message) {
            }

            @Override
            public void onStatus(PubSubType type, CharSequence from) {
                if (type == PubSubType.UNSUBSCRIBE) {
                    done.complete(null);
                }
            }
        };
        connection.addListener(name, confirmation);
        writing();
        connection.unsubscribe(PubSubType.UNSUBSCRIBE, name);
        try {
            awaitConfirmation("UNSUBSCRIBE " + channel, done);
        } finally {
            connection.removeListener(name, confirmation);
            RedisPubSubListener<Object> messages = subscribed.remove(channel);
            if (messages != null) {
                connection.removeListener(name, messages);
            }
        }
    }

    @Override
    protected void close(IOException cause) {
        if (closed.compareAndSet(false, true)) {
            connection.closeAsync(); // marked closed first: Redisson's watchdog does not reconnect it
            listener.closed(this, cause);
        }
    }

    /** Every argument as text or bytes, which Redisson's encoder writes as bulk strings. */
    private static Object[] arguments(Object[] command) {
        Object[] args = new Object[command.length - 1];
        for (int i = 1; i < command.length; i++) {
            Object arg = command[i];
            args[i - 1] = arg instanceof byte[] ? arg : String.valueOf(arg);
        }
        return args;
    }

    @Override
    public String toString() {
        return "redisson:" + host + ":" + port + "#" + clientId();
    }
}
