package io.rlock;

import io.rlock.internal.transport.Connection;

import io.rlock.internal.*;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import io.rlock.internal.transport.Push;

/**
 * A leader election with etcd's verbs over one plain lock, the key {@code name}, held by the
 * leader's candidate id with the server's watchdog (docs/election.md). Candidates queue in the
 * server's FIFO order; the leader stays leader while its client's connection lives and until
 * {@link #resign()}; when its process dies or its connection closes, the next candidate leads
 * within milliseconds.
 *
 * <p>The candidate id is the lock's owner id (what {@link #leader()} reports: put the
 * candidate's address in it). Use a different id for each candidate.
 */
public final class Election {
    private final Engine engine;
    private final String name;
    private final String key;
    private final String candidate;

    Election(Engine engine, String name, String candidate) {
        if (candidate == null || candidate.isEmpty()) {
            throw new IllegalArgumentException("a candidate id");
        }
        this.engine = engine;
        this.name = name;
        this.key = name; // the lock key itself, as in every other helper
        this.candidate = candidate;
    }

    public String getName() {
        return engine.nameOf(name);
    }

    /** The lock key: the name itself. */
    public String getKey() {
        return key;
    }

    public String getCandidate() {
        return candidate;
    }

    /**
     * Waits (queued in the server, no connection blocked) until this candidate leads, and
     * returns its term; at once when it leads already.
     *
     * @throws InterruptedException when interrupted while waiting (it leaves the queue)
     */
    public long campaign() throws InterruptedException {
        return campaignWithin(-1);
    }

    /**
     * Waits at most {@code time} to lead: its term, or -1 when another still leads then (this
     * candidate then leaves the queue).
     */
    public long campaign(long time, TimeUnit unit) throws InterruptedException {
        return campaignWithin(LockImpl.waitMillis(time, unit));
    }

    /** {@code waitMs} -1: no deadline; 0: one attempt. Held with the watchdog, not re-entered. */
    private long campaignWithin(long waitMs) throws InterruptedException {
        Leader now = leader();
        if (now != null && now.candidate().equals(candidate)) {
            return now.term();
        }
        return engine.acquire(Family.LOCK, key, candidate, 1, -1, waitMs, true);
    }

    /** Who leads now ({@code RLOCK.LEADER}), or null. */
    public Leader leader() {
        Map<String, Object> reply = Replies.map(engine.call(key, "RLOCK.LEADER", key));
        if (reply == null) {
            return null;
        }
        return new Leader(Engine.text(reply.get("owner")), Replies.number(reply.get("token"), -1),
                Replies.number(reply.get("ttl"), -1));
    }

    /** Whether this candidate leads now (asks the server). */
    public boolean isLeader() {
        Leader now = leader();
        return now != null && now.candidate().equals(candidate);
    }

    /** Gives up leadership: true when this candidate led (the next candidate leads at once). */
    public boolean resign() {
        long remaining = engine.release(Family.LOCK, key, candidate, 1);
        while (remaining > 0) {
            remaining = engine.release(Family.LOCK, key, candidate, 1);
        }
        return remaining == 0;
    }

    /**
     * Told with the term when this candidate's leadership ends other than by {@link #resign()}:
     * its connection was lost and could not re-bind the holding, or it was force-released.
     * Called on the client's maintenance thread, for as long as the client lives.
     */
    public void onLost(LongConsumer listener) {
        engine.holdings().addListener(lost -> {
            if (lost.name().equals(getName()) && lost.owner().equals(candidate) && lost.type().equals(Family.LOCK.type)) {
                listener.accept(lost.token());
            }
        });
    }

    /**
     * Tells {@code listener} of the leader now, then of every change, driven by the server's
     * keyspace events on the key (no polling: one {@code RLOCK.LEADER} per event). The server
     * must publish the module's class: {@code notify-keyspace-events} with {@code K} and
     * {@code d} ({@code Kdgx} shows deletions and lease ends too). After the subscription's
     * connection drops, it reconnects and reads the leader again, so a change missed while
     * disconnected is reported then. Under Sentinel or Cluster it checks every second that it
     * listens to the key's primary now (keyspace events are per node, and a failover may leave
     * the old primary's connections open) and moves to the new one, reading the leader there.
     * Close the observation to stop.
     *
     * @throws IllegalStateException when {@code CONFIG GET notify-keyspace-events} shows the
     *         server would not publish them (not checked when the user may not run it)
     * @throws RLockException when the subscription cannot be made
     */
    public Observation observe(LeaderListener listener) {
        return new Observation(listener);
    }

    /** An {@link Election#observe} subscription: its own connection and thread. */
    public final class Observation implements AutoCloseable {
        private final LeaderListener listener;
        private final String channel;
        private final ScheduledExecutorService thread;
        private volatile Connection conn;
        /** The node {@link #conn} listens to. */
        private volatile Node node;
        private volatile boolean closed;
        /** The last leader told (touched on the observation's thread only). */
        private Leader last;
        private boolean told;

        private Observation(LeaderListener listener) {
            this.listener = listener;
            this.channel = "__keyspace@" + engine.database() + "__:" + key;
            checkEvents();
            this.thread = Executors.newSingleThreadScheduledExecutor(runnable -> {
                Thread t = new Thread(runnable, "rlock-observe " + key);
                t.setDaemon(true);
                return t;
            });
            try {
                subscribe();
            } catch (IOException e) {
                close();
                throw new RLockException("cannot observe " + key + ": " + e.getMessage(), e);
            }
            run(this::refresh);
            if (engine.router().followsFailovers()) {
                thread.scheduleWithFixedDelay(this::follow, 1, 1, TimeUnit.SECONDS);
            }
        }

        /**
         * Moves to the key's primary when the client's view of it changed (the router asks the
         * sentinels, or reads the slot map, every second); a dead connection reconnects anyway.
         */
        private void follow() {
            if (!closed && conn != null && engine.router().nodeFor(key) != node) {
                try {
                    reconnect();
                } catch (RuntimeException e) {
                    // the next round
                }
            }
        }

        /**
         * Refuses to observe without the events it needs, when the server lets us read its
         * setting ({@code CONFIG GET}; a user not allowed it is trusted).
         */
        private void checkEvents() {
            String flags = ObjectEvents.keyspaceEventFlags(engine, key);
            if (flags != null && !(flags.contains("K") && (flags.contains("d") || flags.contains("A")))) {
                throw new IllegalStateException("the server does not publish the keyspace events an observation needs:"
                        + " notify-keyspace-events is \"" + flags + "\", it needs K and d (CONFIG SET notify-keyspace-events Kdgx)");
            }
        }

        private void subscribe() throws IOException {
            Node target = engine.router().nodeFor(key);
            Connection connection = engine.open(target.address, "rlock-java-observe:" + engine.id,
                    new Connection.Listener() {
                        @Override
                        public void push(Connection from, Push push) {
                            if (push.payload() != null && channel.equals(Replies.text(push.data().get(1)))) {
                                run(Observation.this::refresh);
                            }
                        }

                        @Override
                        public void closed(Connection from, IOException cause) {
                            if (!closed && from == conn) {
                                run(Observation.this::reconnect);
                            }
                        }
                    });
            conn = connection;
            node = target;
            if (closed) {
                connection.close();
                return;
            }
            connection.subscribe(channel);
        }

        /** Reads the leader and tells the listener when it changed. */
        private void refresh() {
            if (closed) {
                return;
            }
            Leader now = leader();
            if (told && (now == null ? last == null : now.sameAs(last))) {
                return;
            }
            told = true;
            last = now;
            listener.leaderChanged(now);
        }

        /** A new subscription in place of the current one, then the leader read again. */
        private void reconnect() {
            drop();
            while (!closed) {
                try {
                    subscribe();
                    refresh();
                    return;
                } catch (IOException | RuntimeException e) {
                    drop();
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException interrupted) {
                        return;
                    }
                }
            }
        }

        /** Closes the current subscription without it asking for a reconnect. */
        private void drop() {
            Connection current = conn;
            conn = null;
            if (current != null) {
                current.close();
            }
        }

        private void run(Runnable task) {
            try {
                thread.execute(() -> {
                    try {
                        task.run();
                    } catch (RuntimeException e) {
                        if (!closed) {
                            run(Observation.this::reconnect);
                        }
                    }
                });
            } catch (RejectedExecutionException e) {
                // closed
            }
        }

        @Override
        public void close() {
            closed = true;
            drop();
            thread.shutdownNow();
        }
    }
}
