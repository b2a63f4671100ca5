package io.rlock.internal.transport;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The wait for a session connection's replies, one for every transport (rlock-lettuce,
 * rlock-redisson, rlock-jedis): the calls are written by the client library, each reply a
 * {@link Future}, awaited here in order within one response timeout.
 *
 * <p>The server binds watchdog holdings to the session connection, so only the connection's own
 * failures close it: no reply within the timeout (the replies behind it could no longer be
 * matched), a failed or a cancelled reply (the client library saw the connection drop; Lettuce
 * cancels the commands in flight then: an {@link IOException}, on which the engine sends the
 * call again with its same request id). A caller's interrupt is not the connection's failure:
 * closing it for that would drop every holding bound to it, other threads' too (issue 41; seen
 * over Lettuce: PermitIdsTest's interrupted waiter lost its session, and the new one could not
 * connect while the thread was interrupted; over Redisson and Jedis: InterruptedReplyWait in
 * rlock-test-support). The wait goes on for the reply, within the
 * same timeout, and the interrupt is set again for the engine, which acts on it with the reply in
 * hand (an interruptible wait leaves the queue and throws InterruptedException).
 */
public abstract class AwaitingConnection implements Connection {
    protected final String host;
    protected final int port;
    protected final Duration timeout;

    private volatile long lastWrite = System.nanoTime();
    private long clientId;

    protected AwaitingConnection(String host, int port, Duration timeout) {
        this.host = host;
        this.port = port;
        this.timeout = timeout;
    }

    /**
     * Reads the connection's {@code CLIENT ID} and, with a {@code clientName}, names it as the
     * engine's own connections are named.
     */
    protected final void identify(String clientName) throws IOException {
        Object id = call("CLIENT", "ID");
        if (!(id instanceof Long)) {
            throw new IOException("CLIENT ID: " + id);
        }
        clientId = (Long) id;
        if (clientName != null) {
            Object named = call("CLIENT", "SETNAME", clientName);
            if (!"OK".equals(named)) {
                throw new IOException("CLIENT SETNAME: " + named);
            }
        }
    }

    @Override
    public final long clientId() {
        return clientId;
    }

    @Override
    public final String host() {
        return host;
    }

    @Override
    public final int port() {
        return port;
    }

    /** Notes that a command is being written now (for {@link #lastWriteNanos()}). */
    protected final void writing() {
        lastWrite = System.nanoTime();
    }

    @Override
    public final long lastWriteNanos() {
        return lastWrite;
    }

    @Override
    public final Object call(Object... args) throws IOException {
        return pipeline(args).get(0);
    }

    /**
     * Closes the connection for good (nothing reconnects it), the listener told once with
     * {@code cause} (null: closed by {@link #close()}); a second call does nothing.
     */
    protected abstract void close(IOException cause);

    @Override
    public final void close() {
        close(null);
    }

    /** Closes the connection with {@code cause}; returns {@code cause}, to throw. */
    protected final IOException failed(IOException cause) {
        close(cause);
        return cause;
    }

    /**
     * A reply the client library completed with {@code cause}: the server's error reply, as a
     * {@link RespError} to return, for a library that reports those as failures; else (the
     * default) the connection failed and is closed.
     */
    protected Object failedReply(Throwable cause) throws IOException {
        throw failed(new IOException(String.valueOf(cause.getMessage()), cause));
    }

    /** Each reply of {@code sent}, in order, within one response timeout from now; see the class comment. */
    protected final List<Object> awaitReplies(List<? extends Future<?>> sent) throws IOException {
        List<Object> replies = new ArrayList<>(sent.size());
        long end = System.nanoTime() + timeout.toNanos();
        boolean[] interrupted = {false};
        try {
            for (Future<?> reply : sent) {
                try {
                    replies.add(throughInterrupts(reply, end, interrupted));
                } catch (TimeoutException e) {
                    throw failed(new IOException("no reply from " + host + ":" + port + " within " + timeout.toMillis() + " ms"));
                } catch (CancellationException e) {
                    throw failed(new IOException("the connection to " + host + ":" + port + " dropped with the call in flight", e));
                } catch (ExecutionException e) {
                    replies.add(failedReply(e.getCause()));
                }
            }
        } finally {
            if (interrupted[0]) {
                Thread.currentThread().interrupt();
            }
        }
        return replies;
    }

    /**
     * Waits within the response timeout for {@code done}, the server's confirmation of a
     * (un)subscription: an interrupt as in {@link #awaitReplies}; otherwise an IOException naming
     * {@code what}, the connection left as it is.
     */
    protected final void awaitConfirmation(String what, Future<?> done) throws IOException {
        boolean[] interrupted = {false};
        try {
            throughInterrupts(done, System.nanoTime() + timeout.toNanos(), interrupted);
        } catch (ExecutionException | TimeoutException | CancellationException e) {
            throw new IOException(what + ": " + e.getMessage(), e);
        } finally {
            if (interrupted[0]) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** {@code reply}'s value by {@code end} (System.nanoTime()), waiting on through interrupts, each noted in {@code interrupted[0]}. */
    private static Object throughInterrupts(Future<?> reply, long end, boolean[] interrupted)
            throws ExecutionException, TimeoutException {
        while (true) {
            try {
                return reply.get(Math.max(1, end - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                interrupted[0] = true;
            }
        }
    }
}
