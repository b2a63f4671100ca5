package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Topology;

/**
 * The failover scenario SentinelTest and ClusterFailoverTest share: for each {@link Kind} (a
 * lock, a write lock, a read lock waited for by writers, a one-permit semaphore, a multi-lock
 * of two keys), on keys of one hash slot so one failover moves them all, a holder and two waiters (one in {@code lock()}/{@code acquire()}, one in a timed
 * try; the client waits by message either way) go through {@code failover}: the confirmed holder
 * keeps its holding on the new primary (or is told it lost it), a fenced resource never accepts
 * two holders, the waiters are served after the holder, and the tokens rise. A latch awaited
 * through the failover opens with a count-down on the new primary; an election observer
 * listening on the old primary follows the key to the new one.
 */
final class FailoverCheck {
    private FailoverCheck() {
    }

    /**
     * How long a step waits for what must happen (it goes on as soon as it does): wide, so that
     * a loaded machine (a load average of 30 seen) fails a run only when the behaviour is wrong
     * (issue 43, item 6: holdersAndWaitersAcrossClusterFailover failed by chance).
     */
    static final long PATIENCE_MS = 60_000;

    interface Failover {
        void run() throws Exception;
    }

    /** The fenced resource: refuses a token below the highest seen, and a second holder. */
    static final class Fence {
        private long highest;
        private int inside;

        synchronized void enter(long token) {
            assertTrue(token >= highest, "token " + token + " below " + highest);
            assertEquals(0, inside, "two holders at once");
            inside++;
            highest = token;
        }

        synchronized void exit() {
            inside--;
        }
    }

    /** One way of holding a key, as the public API offers it. */
    interface Contender {
        void acquire() throws InterruptedException;

        boolean tryAcquire(long seconds) throws InterruptedException;

        long token();

        void release();

        boolean held();
    }

    enum Kind {
        /** READ_WRITE: the holder reads, the waiters write. */
        LOCK, WRITE_LOCK, READ_WRITE, SEMAPHORE, MULTI_LOCK;

        Contender of(RLockClient client, String key, boolean holder) {
            if (this == SEMAPHORE) {
                ROwnedSemaphore semaphore = client.getOwnedSemaphore(key);
                return new Contender() {
                    public void acquire() throws InterruptedException {
                        semaphore.acquire();
                    }

                    public boolean tryAcquire(long seconds) throws InterruptedException {
                        return semaphore.tryAcquire(seconds, TimeUnit.SECONDS);
                    }

                    public long token() {
                        return semaphore.getToken();
                    }

                    public void release() {
                        semaphore.release();
                    }

                    public boolean held() {
                        try {
                            semaphore.getToken();
                            return true;
                        } catch (IllegalMonitorStateException e) {
                            return false;
                        }
                    }
                };
            }
            RLock lock = this == LOCK ? client.getLock(key)
                    : this == WRITE_LOCK || this == READ_WRITE && !holder ? client.getReadWriteLock(key).writeLock()
                    : this == READ_WRITE ? client.getReadWriteLock(key).readLock()
                    : client.getMultiLock(client.getLock(key + ":a"), client.getLock(key + ":b"));
            return new Contender() {
                public void acquire() {
                    lock.lock();
                }

                public boolean tryAcquire(long seconds) throws InterruptedException {
                    return lock.tryLock(seconds, -1, TimeUnit.SECONDS);
                }

                public long token() {
                    return lock instanceof MultiLock multi ? multi.getTokens()[0] : lock.getToken();
                }

                public void release() {
                    lock.unlock();
                }

                public boolean held() {
                    return lock.isHeldByCurrentThread();
                }
            };
        }

        /** Waiters queued for {@code key} on the server of {@code conn}. */
        long queued(AdminConnection conn, String key) {
            if (this == MULTI_LOCK) { // its waiters are counted on each key they wait for
                return Math.max(LOCK.queued(conn, key + ":a"), LOCK.queued(conn, key + ":b"));
            }
            boolean rw = this == WRITE_LOCK || this == READ_WRITE;
            String command = this == LOCK ? "RLOCK.INFO" : rw ? "RWLOCK.INFO" : "RSEM.INFO";
            Map<String, Object> info = Admin.info(conn, command, key);
            Object waiters = info == null ? null : info.get(rw ? "waiting_writers" : "waiters");
            return waiters instanceof List<?> list ? list.size() : waiters instanceof Long count ? count : 0;
        }
    }

    /**
     * The scenario (see the class comment) for the keys {@code tag + kind} of every kind, clients
     * of {@code uri} (confirmation {@link Confirm#auto()}); {@code primaryOf} is the port of the
     * keys' primary now.
     */
    static void run(String uri, String tag, IntSupplier primaryOf, Failover failover) throws Exception {
        int oldPrimary = primaryOf.getAsInt();
        List<RLockClient> clients = new ArrayList<>();
        ExecutorService threads = Executors.newCachedThreadPool();
        List<LostLock> lost = new CopyOnWriteArrayList<>();
        List<Leader> seen = new CopyOnWriteArrayList<>();
        Fence[] fences = new Fence[Kind.values().length];
        List<List<Long>> served = new ArrayList<>();
        Map<Contender, ExecutorService> holderThreads = new java.util.HashMap<>();
        try {
            for (int i = 0; i < 3; i++) {
                clients.add(TestClients.create(uri));
            }
            clients.get(0).addLockLostListener(lost::add);
            String electionKey = "{" + tag + "}election";
            Election leading = clients.get(0).getElection(electionKey, "first");
            try (AdminConnection primary = Topology.admin(oldPrimary)) {
                Admin.call(primary, "CONFIG", "SET", "notify-keyspace-events", "Kdgx");
            }
            long term = leading.campaign();
            Election.Observation observation = clients.get(2).getElection(electionKey, "observer").observe(seen::add);
            Admin.eventually(PATIENCE_MS, "the observer told of the first leader", () -> !seen.isEmpty());

            List<Contender> holders = new ArrayList<>();
            List<Long> firstTokens = new ArrayList<>();
            List<Future<Long>> waiters = new ArrayList<>();
            for (Kind kind : Kind.values()) {
                String key = "{" + tag + "}" + kind.name().toLowerCase();
                Fence fence = fences[kind.ordinal()] = new Fence();
                List<Long> tokens = new CopyOnWriteArrayList<>();
                served.add(tokens);
                if (kind == Kind.SEMAPHORE) {
                    clients.get(0).getOwnedSemaphore(key).trySetPermits(1);
                }
                Contender holder = kind.of(clients.get(0), key, true);
                holders.add(holder);
                // Each holding on a thread of its own: the owner is the thread.
                ExecutorService holderThread = Executors.newSingleThreadExecutor();
                firstTokens.add(holderThread.submit(() -> {
                    holder.acquire();
                    fence.enter(holder.token());
                    return holder.token();
                }).get(PATIENCE_MS, TimeUnit.MILLISECONDS));
                holderThreads.put(holder, holderThread);
                for (int i = 1; i < 3; i++) {
                    Contender waiter = kind.of(clients.get(i), key, false);
                    boolean blocked = i == 1;
                    waiters.add(threads.submit(() -> {
                        if (blocked) {
                            waiter.acquire();
                        } else {
                            assertTrue(waiter.tryAcquire(60), "a waiter served within 60 s");
                        }
                        long token = waiter.token();
                        fence.enter(token);
                        tokens.add(token);
                        fence.exit();
                        waiter.release();
                        return token;
                    }));
                    Future<Long> started = waiters.get(waiters.size() - 1);
                    try (AdminConnection primary = Topology.admin(oldPrimary)) {
                        long queued = i;
                        Admin.eventually(PATIENCE_MS, kind + " waiter " + i + " queued", () -> {
                            if (started.isDone()) {
                                throw new AssertionError(kind + " waiter " + queued + " ended before the failover: " + outcome(started));
                            }
                            return kind.queued(primary, key) == queued;
                        });
                    }
                }
            }

            // A latch awaited through the failover, counted down on the new primary.
            String latchKey = "{" + tag + "}latch";
            RCountDownLatch latch = clients.get(0).getCountDownLatch(latchKey);
            assertTrue(latch.trySetCount(1));
            Future<Boolean> awaiting;
            try (AdminConnection primary = Topology.admin(oldPrimary)) {
                long before = waitersOn(primary);
                awaiting = threads.submit(() -> clients.get(1).getCountDownLatch(latchKey).await(2 * PATIENCE_MS, TimeUnit.MILLISECONDS));
                Admin.eventually(PATIENCE_MS, "the latch awaited", () -> waitersOn(primary) == before + 1);
            }

            failover.run();
            assertNotEquals(oldPrimary, primaryOf.getAsInt(), "a new primary");
            assertTrue(!awaiting.isDone(), "the latch awaiter waits through the failover: " + (awaiting.isDone() ? outcome(awaiting) : ""));
            latch.countDown();
            assertTrue(awaiting.get(30, TimeUnit.SECONDS), "the latch awaiter released by a count-down on the new primary");

            // The observer moved: it listens on the new primary (the old one, a replica now or
            // cut off, may not hear of changes), and a change of leader made there reaches it.
            try (AdminConnection primary = Topology.admin(primaryOf.getAsInt())) {
                Admin.call(primary, "CONFIG", "SET", "notify-keyspace-events", "Kdgx");
                String observer = "rlock-java-observe:" + clients.get(2).getId();
                Admin.eventually(PATIENCE_MS, "the observer subscribed on the new primary",
                        () -> Admin.clientsNamed(primary, observer).size() == 1);
            }
            assertTrue(leading.resign(), "the first leader resigned on the new primary");
            Admin.eventually(PATIENCE_MS, "the observer told of the resignation on the new primary: " + seen,
                    () -> seen.get(seen.size() - 1) == null);
            observation.close();
            assertTrue(term > 0);

            for (Kind kind : Kind.values()) {
                Contender holder = holders.get(kind.ordinal());
                Fence fence = fences[kind.ordinal()];
                long first = firstTokens.get(kind.ordinal());
                holderThreads.remove(holder).submit(() -> {
                    if (holder.held()) {
                        assertEquals(first, holder.token());
                        fence.exit();
                        holder.release();
                    } else {
                        Admin.eventually(PATIENCE_MS, "the loss reported", () -> !lost.isEmpty());
                        fence.exit();
                        assertThrows(IllegalMonitorStateException.class, holder::release);
                    }
                    return null;
                }).get(60, TimeUnit.SECONDS);
                for (int i = 0; i < 2; i++) {
                    Future<Long> waiter = waiters.get(kind.ordinal() * 2 + i);
                    assertTrue(waiter.get(60, TimeUnit.SECONDS) > first, kind + ": served after the holder, with a higher token");
                }
                List<Long> tokens = served.get(kind.ordinal());
                assertTrue(tokens.get(1) > tokens.get(0), kind + ": tokens rise: " + tokens);
            }
            assertTrue(lost.isEmpty(), "the confirmed holdings survived the failover: " + lost);
        } finally {
            threads.shutdownNow();
            holderThreads.values().forEach(ExecutorService::shutdownNow);
            holderThreads.clear();
            clients.forEach(RLockClient::close);
        }
    }


    /**
     * A kill -9 of {@code primary} with promotion of {@code replica}, where the replica never got
     * one holding: it is stopped (SIGSTOP) and its link dropped by the primary ({@code CLIENT KILL
     * TYPE replica}: the bytes of a write made after that cannot sit in its socket buffer), a
     * client that does not confirm ({@link Confirm#off()}) takes {@code key}, then the primary
     * dies and the replica resumes and is promoted by {@code promote}. The holder is told: its
     * {@link LockLostListener} hears of it, {@code unlock()} throws
     * {@link IllegalMonitorStateException}, and another client takes the key at once with a
     * higher token.
     */
    static void killWithAnUnsyncedHolding(Topology topology, String uri, String key, int primary, int replica,
            Failover promote) throws Exception {
        List<LostLock> lost = new CopyOnWriteArrayList<>();
        ExecutorService holderThread = Executors.newSingleThreadExecutor();
        try (RLockClient unconfirmed = TestClients.create(uri, new RLockOptions().confirm(Confirm.off()));
                RLockClient other = TestClients.create(uri)) {
            unconfirmed.addLockLostListener(lost::add);
            RLock lock = unconfirmed.getLock(key);
            topology.pause(replica);
            long token;
            try (AdminConnection conn = Topology.admin(primary)) {
                Admin.call(conn, "CLIENT", "KILL", "TYPE", "replica");
                token = holderThread.submit(() -> {
                    lock.lock();
                    return lock.getToken();
                }).get(PATIENCE_MS, TimeUnit.MILLISECONDS);
                assertTrue(Admin.info(conn, "RLOCK.INFO", key) != null, "held on the old primary");
            } finally {
                topology.command("kill", "port", primary);
                topology.resume(replica);
            }
            promote.run();
            Admin.eventually(30_000, "the lost holding reported", () -> lost.stream().anyMatch(l -> l.name().equals(key)));
            holderThread.submit(() -> {
                assertTrue(!lock.isHeldByCurrentThread(), "not held once reported lost");
                assertThrows(IllegalMonitorStateException.class, lock::unlock);
                return null;
            }).get(30, TimeUnit.SECONDS);
            RLock next = other.getLock(key);
            assertTrue(next.tryLock(), "free on the new primary");
            assertTrue(next.getToken() > token, "the new primary's token " + next.getToken() + " above " + token);
            next.unlock();
        } finally {
            holderThread.shutdownNow();
        }
    }

    /** {@code rlock_waiters} of {@code INFO rlock}: every wait queued on that server. */
    private static long waitersOn(AdminConnection server) {
        return Long.parseLong(Admin.infoField(server, "rlock", "rlock_waiters"));
    }

    private static String outcome(Future<?> done) {
        try {
            return "token " + done.get();
        } catch (Exception e) {
            return e.toString();
        }
    }
}
