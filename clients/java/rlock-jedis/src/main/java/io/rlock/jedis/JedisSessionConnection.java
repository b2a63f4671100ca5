package io.rlock.jedis;

import io.rlock.internal.transport.AwaitingConnection;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import io.rlock.internal.transport.SessionSettings;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * One engine connection over Jedis: a dedicated {@link redis.clients.jedis.Connection} made with
 * the user's {@link JedisClientConfig} (Jedis itself connects, authenticates, selects the
 * database, sets TLS and names the connection), never taken from or given back to a pool, so the
 * server's watchdog binding is this socket's alone. Commands are written with Jedis's
 * {@code sendCommand}; one reader thread reads every reply with Jedis's protocol reader and hands
 * it to the oldest waiting call, or, once the connection subscribed (RESP2: the engine gives the
 * {@code __rlock__:<id>} messages their own connection), a {@code message} to the engine.
 *
 * <p>When the socket drops or a reply is late, the connection is closed for good and the engine
 * told once; it opens a new session, which re-binds the holdings or reports them lost. Nothing
 * reconnects behind the engine's back.
 */
final class JedisSessionConnection extends AwaitingConnection {
    private final Wire wire;
    private final Connection.Listener listener;
    /** The calls written and not answered yet, oldest first; guarded by itself, with the writes. */
    private final Queue<CompletableFuture<Object>> pending = new ArrayDeque<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean subscribed;

    /** A Jedis connection whose flush the writer calls after writing a batch (Jedis keeps it protected). */
    private static final class Wire extends redis.clients.jedis.Connection {
        Wire(HostAndPort node, JedisClientConfig config) {
            super(node, config);
        }

        void send(Object[]... commands) {
            for (Object[] command : commands) {
                sendCommand(Commands.of(command));
            }
            flush();
        }
    }

    private JedisSessionConnection(Wire wire, Connection.Listener listener, String host, int port, Duration timeout) {
        super(host, port, timeout);
        this.wire = wire;
        this.listener = listener;
    }

    /**
     * Connects to {@code node} with {@code config} (RESP2, the session's client name: Jedis
     * authenticates, selects the database and names it), starts its reader and reads its
     * {@code CLIENT ID}.
     */
    static JedisSessionConnection open(HostAndPort node, JedisClientConfig config, SessionSettings settings)
            throws IOException {
        Wire wire;
        try {
            wire = new Wire(node, config);
            // The reader waits for messages as long as the session lives: no read timeout on it;
            // each call waits for its reply within the engine's response timeout instead.
            wire.setSoTimeout(0);
        } catch (JedisDataException e) {
            throw new RespServerException("AUTH through Jedis to " + node, new RespError(String.valueOf(e.getMessage())));
        } catch (RuntimeException e) {
            throw new IOException("cannot connect through Jedis to " + node + ": " + e.getMessage(), e);
        }
        JedisSessionConnection opened = new JedisSessionConnection(wire, settings.listener(), settings.node().host(),
                settings.node().port(), settings.responseTimeout());
        Thread reader = new Thread(opened::read, "rlock-jedis reader " + node);
        reader.setDaemon(true);
        reader.start();
        try {
            opened.identify(null); // Jedis named it
        } catch (IOException e) {
            opened.close();
            throw e;
        }
        return opened;
    }

    private void read() {
        try {
            while (!closed.get()) {
                Object reply;
                try {
                    reply = wire.getUnflushedObject();
                } catch (JedisDataException error) {
                    reply = error;
                }
                reply = Replies.of(reply);
                if (subscribed && isMessage(reply)) {
                    listener.push(this, new Push(List.of(((List<?>) reply).toArray())));
                    continue;
                }
                CompletableFuture<Object> call;
                synchronized (pending) {
                    call = pending.poll();
                }
                if (call == null) {
                    throw new IOException("a reply nobody asked for from " + host + ":" + port + ": " + reply);
                }
                call.complete(reply);
            }
        } catch (JedisConnectionException e) {
            close(new IOException("the connection to " + host + ":" + port + " dropped: " + e.getMessage(), e));
        } catch (IOException e) {
            close(e);
        } catch (RuntimeException e) {
            close(new IOException("reading from " + host + ":" + port + ": " + e, e));
        }
    }

    private static boolean isMessage(Object reply) {
        if (!(reply instanceof List<?> list) || list.isEmpty()) {
            return false;
        }
        Object kind = list.get(0);
        return "message".equals(kind) || "pmessage".equals(kind);
    }

    @Override
    public int protocol() {
        return 2;
    }

    @Override
    public boolean isOpen() {
        return !closed.get() && wire.isConnected() && !wire.isBroken();
    }

    @Override
    public List<Object> pipeline(Object[]... commands) throws IOException {
        List<CompletableFuture<Object>> sent = new ArrayList<>(commands.length);
        synchronized (pending) {
            if (!isOpen()) {
                throw new IOException("the connection to " + host + ":" + port + " is closed");
            }
            for (int i = 0; i < commands.length; i++) {
                CompletableFuture<Object> reply = new CompletableFuture<>();
                sent.add(reply);
                pending.add(reply);
            }
            writing();
            try {
                wire.send(commands);
            } catch (RuntimeException e) {
                throw failed(new IOException("writing to " + host + ":" + port + ": " + e.getMessage(), e));
            }
        }
        return awaitReplies(sent);
    }

    @Override
    public void subscribe(String channel) throws IOException {
        subscribed = true;
        call("SUBSCRIBE", channel);
    }

    @Override
    public void unsubscribe(String channel) throws IOException {
        call("UNSUBSCRIBE", channel);
    }

    @Override
    protected void close(IOException cause) {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            wire.disconnect();
        } catch (RuntimeException e) {
            // already broken: nothing more to let go of
        }
        IOException failed = cause != null ? cause : new IOException("the connection to " + host + ":" + port + " is closed");
        synchronized (pending) {
            for (CompletableFuture<Object> call : pending) {
                call.completeExceptionally(failed);
            }
            pending.clear();
        }
        listener.closed(this, cause);
    }

    @Override
    public String toString() {
        return "jedis:" + host + ":" + port + "#" + clientId();
    }
}
