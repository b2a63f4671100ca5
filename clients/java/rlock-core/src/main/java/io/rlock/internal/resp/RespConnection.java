package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import io.rlock.internal.transport.Connection;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * One connection to a Redis server, shared safely by any number of threads: commands are
 * pipelined (each caller waits for its own reply), and one reader thread per connection reads
 * replies in order and hands out-of-band messages (RESP3 pushes, a RESP2 subscriber's
 * messages) to a {@link Connection.Listener}.
 *
 * <p>{@link #open} connects (TLS through the JDK's {@link SSLSocket} when a factory is given),
 * says {@code HELLO 3} (with {@code AUTH} and {@code SETNAME}) and falls back to RESP2
 * ({@code AUTH}, {@code CLIENT SETNAME}) when the server refuses it, then {@code SELECT}s the
 * database. A reply that does not come within the response timeout closes the connection: the
 * replies behind it could no longer be matched to their calls.
 */
public final class RespConnection implements Connection {
    /** How to connect. Setters return this; {@link #copy()} for another node of a cluster. */
    public static final class Settings {
        String host = "127.0.0.1";
        int port = 6379;
        SSLSocketFactory ssl;
        boolean verifyHostname = true;
        String user;
        String password;
        int db;
        int protocol = 3;
        Duration connectTimeout = Duration.ofSeconds(5);
        Duration responseTimeout = Duration.ofSeconds(10);
        String clientName;
        Connection.Listener listener = new Connection.Listener() {
        };

        public Settings address(String host, int port) {
            this.host = host;
            this.port = port;
            return this;
        }

        /** TLS with this factory (null: plain TCP). */
        public Settings ssl(SSLSocketFactory factory) {
            this.ssl = factory;
            return this;
        }

        /** Whether TLS checks that the server's certificate names the host (default true). */
        public Settings verifyHostname(boolean verify) {
            this.verifyHostname = verify;
            return this;
        }

        /** {@code user} null: the {@code default} user. {@code password} null: no AUTH. */
        public Settings auth(String user, String password) {
            this.user = user;
            this.password = password;
            return this;
        }

        public Settings db(int db) {
            this.db = db;
            return this;
        }

        /** 3: {@code HELLO 3}, RESP2 when the server refuses it (the default); 2: RESP2 only. */
        public Settings protocol(int protocol) {
            if (protocol != 2 && protocol != 3) {
                throw new IllegalArgumentException("protocol 2 or 3");
            }
            this.protocol = protocol;
            return this;
        }

        public Settings connectTimeout(Duration timeout) {
            this.connectTimeout = timeout;
            return this;
        }

        public Settings responseTimeout(Duration timeout) {
            this.responseTimeout = timeout;
            return this;
        }

        public Settings clientName(String name) {
            this.clientName = name;
            return this;
        }

        /** Who is told of pushes and of the close. */
        public Connection.Listener listener() {
            return listener;
        }

        /** The {@code CLIENT SETNAME} of the connection, or null. */
        public String clientName() {
            return clientName;
        }

        public Settings listener(Connection.Listener listener) {
            this.listener = listener;
            return this;
        }

        public Settings uri(RedisUri uri, SSLSocketFactory tlsFactory) {
            address(uri.host, uri.port).auth(uri.user, uri.password).db(uri.db);
            ssl(uri.tls ? (tlsFactory != null ? tlsFactory : (SSLSocketFactory) SSLSocketFactory.getDefault()) : null);
            return this;
        }

        public String host() {
            return host;
        }

        public int port() {
            return port;
        }

        public int db() {
            return db;
        }

        public int protocol() {
            return protocol;
        }

        public Duration responseTimeout() {
            return responseTimeout;
        }

        public Settings copy() {
            Settings copy = new Settings();
            copy.host = host;
            copy.port = port;
            copy.ssl = ssl;
            copy.verifyHostname = verifyHostname;
            copy.user = user;
            copy.password = password;
            copy.db = db;
            copy.protocol = protocol;
            copy.connectTimeout = connectTimeout;
            copy.responseTimeout = responseTimeout;
            copy.clientName = clientName;
            copy.listener = listener;
            return copy;
        }
    }

    private final Settings settings;
    private final Socket socket;
    private final OutputStream out;
    private final RespReader reader;
    private final Object writeLock = new Object();
    private final Queue<CompletableFuture<Object>> pending = new ConcurrentLinkedQueue<>();
    private final Thread readerThread;
    private volatile boolean closed;
    private volatile IOException closeCause;
    private volatile boolean subscriber;
    private volatile long lastWrite = System.nanoTime();
    private int protocol;
    private long clientId = -1;

    private RespConnection(Settings settings, Socket socket) throws IOException {
        this.settings = settings.copy();
        this.socket = socket;
        this.out = socket.getOutputStream();
        this.reader = new RespReader(new BufferedInputStream(socket.getInputStream(), 64 * 1024));
        this.readerThread = new Thread(this::readLoop, "rlock-resp " + settings.host + ":" + settings.port);
        this.readerThread.setDaemon(true);
    }

    /** Connects, authenticates, selects the database; see the class comment. */
    public static RespConnection open(Settings settings) throws IOException {
        Socket socket = Sockets.connect(settings);
        RespConnection connection = new RespConnection(settings, socket);
        connection.readerThread.start();
        try {
            Handshake.Result result = Handshake.run(connection, connection.settings);
            connection.protocol = result.protocol();
            connection.clientId = result.clientId();
        } catch (IOException | RuntimeException e) {
            connection.close();
            throw e;
        }
        return connection;
    }

    /** 3 when {@code HELLO 3} was accepted, else 2. */
    public int protocol() {
        return protocol;
    }

    /** The server's id for this connection ({@code CLIENT ID}). */
    public long clientId() {
        return clientId;
    }

    public String host() {
        return settings.host;
    }

    public int port() {
        return settings.port;
    }

    public boolean isOpen() {
        return !closed;
    }

    /** Nanos ({@link System#nanoTime()}) of the last command written. */
    public long lastWriteNanos() {
        return lastWrite;
    }

    /**
     * Sends one command and waits for its reply. An error reply is returned as a
     * {@link RespError}; a broken connection, a timeout or a closed connection raise
     * {@link IOException} (and leave the connection closed).
     */
    public Object call(Object... args) throws IOException {
        return pipeline(new Object[][] {args}).get(0);
    }

    /**
     * {@code ASKING} and then the command, written together so that no other caller's command
     * comes between them (Redis Cluster's {@code ASK} redirection). The command's reply.
     */
    public Object callAsking(Object... args) throws IOException {
        List<Object> replies = pipeline(new Object[] {"ASKING"}, args);
        return replies.get(0) instanceof RespError ? replies.get(0) : replies.get(1);
    }

    /** Commands written together (no other caller's command between them), and their replies. */
    public List<Object> pipeline(Object[]... commands) throws IOException {
        List<CompletableFuture<Object>> replies = new ArrayList<>(commands.length);
        byte[] all = new byte[0];
        for (Object[] command : commands) {
            all = RespWriter.concat(all, RespWriter.encode(command));
            replies.add(new CompletableFuture<>());
        }
        synchronized (writeLock) {
            ensureOpen();
            pending.addAll(replies);
            write(all);
        }
        List<Object> values = new ArrayList<>(commands.length);
        for (CompletableFuture<Object> reply : replies) {
            values.add(await(reply));
        }
        return values;
    }

    /**
     * Subscribes to one channel. RESP3: the connection keeps running commands, and the messages
     * arrive as pushes. RESP2: from now on the connection is a subscriber (only
     * {@code PING} and subscription commands), its messages reported as pushes too.
     */
    public void subscribe(String channel) throws IOException {
        if (protocol == 2) {
            subscriber = true;
        }
        Object reply = call("SUBSCRIBE", channel);
        if (!answers(reply, "subscribe")) {
            throw new RespServerException("SUBSCRIBE " + channel, reply);
        }
    }

    /** Leaves one channel of {@link #subscribe}'s (RESP2: the connection stays a subscriber while it has others). */
    public void unsubscribe(String channel) throws IOException {
        Object reply = call("UNSUBSCRIBE", channel);
        if (!answers(reply, "unsubscribe")) {
            throw new RespServerException("UNSUBSCRIBE " + channel, reply);
        }
    }

    /** Whether {@code reply} is the (un)subscription reply {@code kind}: a RESP3 push, or a RESP2 array. */
    private static boolean answers(Object reply, String kind) {
        return reply instanceof Push && ((Push) reply).kind().equals(kind)
                || reply instanceof List && !((List<?>) reply).isEmpty() && kind.equals(Push.text(((List<?>) reply).get(0)));
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException("connection to " + settings.host + ":" + settings.port + " is closed",
                    closeCause);
        }
    }

    private void write(byte[] bytes) throws IOException {
        try {
            out.write(bytes);
            out.flush();
            lastWrite = System.nanoTime();
        } catch (IOException e) {
            close(e);
            throw e;
        }
    }

    private Object await(CompletableFuture<Object> reply) throws IOException {
        long timeoutMs = settings.responseTimeout.toMillis();
        boolean interrupted = false;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        try {
            while (true) {
                try {
                    return reply.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    // A reply must be read whatever happens to the caller: keep waiting, and
                    // give the interrupt back afterwards.
                    interrupted = true;
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    throw cause instanceof IOException ? (IOException) cause : new IOException(cause);
                } catch (TimeoutException e) {
                    IOException timeout = new InterruptedIOException(
                            "no reply from " + settings.host + ":" + settings.port + " within " + timeoutMs + " ms");
                    close(timeout);
                    throw timeout;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void readLoop() {
        try {
            while (!closed) {
                Object value = reader.read();
                Push message = Push.message(value, subscriber);
                if (message != null) {
                    settings.listener.push(this, message);
                    continue;
                }
                complete(value);
            }
        } catch (IOException e) {
            close(e);
        } catch (RuntimeException | Error e) {
            close(new IOException("reader failed", e));
        }
    }

    private void complete(Object value) throws RespProtocolException {
        CompletableFuture<Object> head = pending.poll();
        if (head == null) {
            throw new RespProtocolException("a reply nobody asked for: " + value);
        }
        head.complete(value);
    }

    @Override
    public void close() {
        close(new IOException("connection closed by the client"));
    }

    private void close(IOException cause) {
        synchronized (writeLock) {
            if (closed) {
                return;
            }
            closeCause = cause;
            closed = true;
        }
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        CompletableFuture<Object> waiting;
        while ((waiting = pending.poll()) != null) {
            waiting.completeExceptionally(cause);
        }
        try {
            settings.listener.closed(this, cause);
        } catch (RuntimeException ignored) {
            // a listener's failure must not keep the connection half-closed
        }
    }

    @Override
    public String toString() {
        return "RespConnection[" + settings.host + ":" + settings.port + " id=" + clientId + " resp" + protocol
                + (closed ? " closed" : "") + "]";
    }

    /** Text of a reply value: bulk strings decoded as UTF-8, simple strings as they are. */
    public static String text(Object value) {
        if (value == null) {
            return null;
        }
        return value instanceof byte[] ? new String((byte[]) value, StandardCharsets.UTF_8) : value.toString();
    }
}
