package io.rlock.internal;

import io.rlock.internal.transport.Connection;

import io.rlock.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import io.rlock.internal.transport.Push;

/**
 * Redisson's object listeners ({@link RLock#addListener}): Redis's keyevent channels
 * {@code __keyevent@<db>__:expired} and {@code __keyevent@<db>__:del}, whose message is the key.
 * They are subscribed on the session of every node of the client (the connection that carries
 * the {@code NOTIFY} messages, or RESP2's subscriber), and on each new session, while a listener
 * needs them: no connection of their own. Listeners are told on one thread of the client's, in
 * the order the events came; a release of a key with listeners returns once they have been told
 * of what it fired ({@link #settle}), so that a {@code del} is seen in the caller's order.
 */
public final class ObjectEvents {
    private static final String EXPIRED = "expired";
    private static final String DELETED = "del";

    private record Registration(String key, String event, ObjectListener listener) {
    }

    private final Engine engine;
    /** {@code __keyevent@<db>__:}: the channels' common start. */
    private final String prefix;
    private final byte[] prefixBytes;
    private final Map<Integer, List<Registration>> byId = new ConcurrentHashMap<>();
    private final AtomicInteger lastId = new AtomicInteger();
    private final ExecutorService teller;
    private volatile Thread tellerThread;

    ObjectEvents(Engine engine, String clientId, int db) {
        this.engine = engine;
        this.prefix = "__keyevent@" + db + "__:";
        this.prefixBytes = prefix.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        this.teller = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "rlock-object-listeners " + clientId);
            thread.setDaemon(true);
            tellerThread = thread;
            return thread;
        });
    }

    /**
     * Registers {@code listener} for {@code key}'s events: its id for {@link #remove}.
     *
     * @throws IllegalArgumentException for a listener that is neither expired nor deleted
     * @throws IllegalStateException when the server's {@code notify-keyspace-events} (if the user
     *         may read it) would not publish the events
     */
    int add(String key, ObjectListener listener) {
        List<Registration> registrations = new ArrayList<>();
        if (listener instanceof ExpiredObjectListener) {
            registrations.add(new Registration(key, EXPIRED, listener));
        }
        if (listener instanceof DeletedObjectListener) {
            registrations.add(new Registration(key, DELETED, listener));
        }
        if (registrations.isEmpty()) {
            throw new IllegalArgumentException("a listener of " + key + " is an ExpiredObjectListener or a DeletedObjectListener, not "
                    + (listener == null ? "null" : listener.getClass().getName()));
        }
        for (Registration registration : registrations) {
            requireEvents(key, registration.event);
        }
        int id = lastId.incrementAndGet();
        synchronized (this) {
            byId.put(id, registrations);
            for (Node node : engine.router().nodes()) {
                try {
                    subscribe(subscriber(node.session()));
                } catch (IOException | RuntimeException e) {
                    // its next session subscribes (Node asks for the channels when it opens one)
                }
            }
        }
        return id;
    }

    /** Removes the listener {@code id} (an unknown id is ignored, as Redisson's); its channels are left when no other needs them. */
    void remove(int id) {
        synchronized (this) {
            if (byId.remove(id) == null) {
                return;
            }
            Set<String> unneeded = new HashSet<>(List.of(prefix + EXPIRED, prefix + DELETED));
            unneeded.removeAll(channels());
            for (Node node : engine.router().nodes()) {
                if (!node.isUp()) {
                    continue;
                }
                for (String channel : unneeded) {
                    try {
                        subscriber(node.session()).unsubscribe(channel);
                    } catch (IOException | RuntimeException e) {
                        // a dropped session took its subscriptions with it
                    }
                }
            }
        }
    }

    /** Subscribes a new session's subscriber to the channels the listeners need (called as {@link Node} opens it). */
    void subscribe(Connection subscriber) throws IOException {
        for (String channel : channels()) {
            subscriber.subscribe(channel);
        }
    }

    private Set<String> channels() {
        Set<String> channels = new HashSet<>();
        byId.values().forEach(registrations -> registrations.forEach(r -> channels.add(prefix + r.event)));
        return channels;
    }

    private static Connection subscriber(Node.Session session) {
        return session.sub != null ? session.sub : session.conn;
    }

    /** A push from a session: true when it is a keyevent message (told to the key's listeners), not the dispatcher's. */
    boolean push(Push push) {
        List<Object> data = push.data();
        if (!"message".equals(push.kind()) || data.size() < 3) {
            return false;
        }
        if (data.get(1) instanceof byte[] bytes && !startsWith(bytes, prefixBytes)) {
            return false; // told without decoding the channel: every NOTIFY message passes here (issue 46, allocation)
        }
        String channel = Replies.text(data.get(1));
        if (!channel.startsWith(prefix)) {
            return false;
        }
        String event = channel.substring(prefix.length());
        String key = Replies.text(data.get(2));
        for (List<Registration> registrations : byId.values()) {
            for (Registration registration : registrations) {
                if (registration.key.equals(key) && registration.event.equals(event)) {
                    tell(registration);
                }
            }
        }
        return true;
    }

    private static boolean startsWith(byte[] bytes, byte[] prefix) {
        return bytes.length >= prefix.length && java.util.Arrays.equals(bytes, 0, prefix.length, prefix, 0, prefix.length);
    }

    private void tell(Registration registration) {
        try {
            teller.execute(() -> {
                try {
                    if (registration.event.equals(EXPIRED)) {
                        ((ExpiredObjectListener) registration.listener).onExpired(engine.nameOf(registration.key));
                    } else {
                        ((DeletedObjectListener) registration.listener).onDeleted(engine.nameOf(registration.key));
                    }
                } catch (RuntimeException e) {
                    // a listener's failure is its own
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed
        }
    }

    /**
     * After a release of {@code key}: when it has listeners, returns once they have been told of
     * the events the release fired. Those were sent to the session's subscriber before the
     * answer to a {@code PING} sent after the release, and the reader hands them to the teller in
     * order; then the teller is drained. Not on the teller itself (a listener that releases).
     */
    void settle(String key) {
        if (!watched(key) || Thread.currentThread() == tellerThread) {
            return;
        }
        try {
            Node.Session session = engine.router().nodeFor(key).session();
            subscriber(session).call("PING");
            teller.submit(() -> { }).get(engine.options().responseTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // best effort: the events still come, a little later
        }
    }

    private boolean watched(String key) {
        for (List<Registration> registrations : byId.values()) {
            for (Registration registration : registrations) {
                if (registration.key.equals(key)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Refuses a listener the server would never tell, when it lets us read its setting
     * ({@code CONFIG GET}; a user not allowed it is trusted).
     */
    private void requireEvents(String key, String event) {
        String flags = keyspaceEventFlags(engine, key);
        String letter = event.equals(EXPIRED) ? "x" : "g";
        if (flags != null && !(flags.contains("E") && (flags.contains(letter) || flags.contains("A")))) {
            throw new IllegalStateException("the server does not publish the " + event + " events of " + key
                    + ": notify-keyspace-events is \"" + flags + "\", it needs E and " + letter
                    + " (CONFIG SET notify-keyspace-events E" + letter + ")");
        }
    }

    /** The server's {@code notify-keyspace-events}, or null when this user may not read it. */
    public static String keyspaceEventFlags(Engine engine, String key) {
        try {
            Map<String, Object> config = Replies.map(engine.call(key, "CONFIG", "GET", "notify-keyspace-events"));
            return config == null ? null : Engine.text(config.get("notify-keyspace-events"));
        } catch (RLockException e) {
            return null;
        }
    }

    void close() {
        teller.shutdownNow();
    }
}
