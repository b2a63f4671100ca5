package io.rlock.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A TCP proxy in front of a server that can lose a reply: armed with a marker, it forwards the
 * next client bytes that contain it to the server, forwards nothing more from the server on
 * that connection, and closes both sides shortly after (so the server ran the command, and the
 * client never sees its answer). {@link #holdReplies()} keeps back everything the server sends
 * until {@link #passReplies()}: a message (a NOTIFY grant) read late, as by a paused process.
 */
public final class Proxy implements AutoCloseable {
    private final ServerSocket listener;
    private final int targetPort;
    private final List<Pair> pairs = new CopyOnWriteArrayList<>();
    private final AtomicInteger accepted = new AtomicInteger();
    private final AtomicReference<byte[]> marker = new AtomicReference<>();
    private final CountDownLatch dropped = new CountDownLatch(1);
    private volatile CountDownLatch drop = new CountDownLatch(1);
    private boolean holding;

    public Proxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "proxy-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public int port() {
        return listener.getLocalPort();
    }

    public String uri() {
        return "redis://127.0.0.1:" + port();
    }

    /** Connections accepted so far. */
    public int accepted() {
        return accepted.get();
    }

    /** Loses the reply to the next command whose bytes contain {@code text}; see the class comment. */
    public void dropReplyTo(String text) {
        drop = new CountDownLatch(1);
        marker.set(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Waits until the armed drop happened. */
    public boolean awaitDrop(long ms) throws InterruptedException {
        return drop.await(ms, TimeUnit.MILLISECONDS);
    }

    /** From now on, what the server sends waits here (in order) until {@link #passReplies()}. */
    public synchronized void holdReplies() {
        holding = true;
    }

    /** Passes on what was held back, and holds nothing more. */
    public synchronized void passReplies() {
        holding = false;
        notifyAll();
    }

    private synchronized void awaitPass() throws InterruptedException {
        while (holding) {
            wait();
        }
    }

    /** Closes every connection now. */
    public void cutAll() {
        pairs.forEach(Pair::close);
    }

    private void accept() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                accepted.incrementAndGet();
                Pair pair = new Pair(client, server);
                pairs.add(pair);
                pair.start();
            } catch (IOException e) {
                // closed, or the server is gone
            }
        }
    }

    private final class Pair {
        final Socket client;
        final Socket server;
        volatile boolean frozen;

        Pair(Socket client, Socket server) {
            this.client = client;
            this.server = server;
        }

        void start() {
            Thread up = new Thread(() -> pump(client, server, true), "proxy-up");
            Thread down = new Thread(() -> pump(server, client, false), "proxy-down");
            up.setDaemon(true);
            down.setDaemon(true);
            up.start();
            down.start();
        }

        void pump(Socket from, Socket to, boolean upstream) {
            byte[] buffer = new byte[64 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    if (upstream) {
                        byte[] wanted = marker.get();
                        if (wanted != null && contains(buffer, n, wanted) && marker.compareAndSet(wanted, null)) {
                            frozen = true;
                            out.write(buffer, 0, n);
                            out.flush();
                            Thread.sleep(100); // the server runs it; its reply goes nowhere
                            close();
                            drop.countDown();
                            return;
                        }
                    } else if (frozen) {
                        continue;
                    } else {
                        awaitPass();
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // closed
            }
            close();
        }

        void close() {
            try {
                client.close();
            } catch (IOException ignored) {
                // closing
            }
            try {
                server.close();
            } catch (IOException ignored) {
                // closing
            }
            pairs.remove(this);
        }
    }

    private static boolean contains(byte[] data, int length, byte[] wanted) {
        outer:
        for (int i = 0; i + wanted.length <= length; i++) {
            for (int j = 0; j < wanted.length; j++) {
                if (data[i + j] != wanted[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    @Override
    public void close() throws IOException {
        listener.close();
        cutAll();
    }
}
