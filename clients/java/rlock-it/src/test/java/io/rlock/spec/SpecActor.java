package io.rlock.spec;

import io.rlock.testing.TestClients;
import io.rlock.*;
import io.rlock.internal.*;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import io.rlock.Confirm;
import io.rlock.DeadlockException;
import io.rlock.Leader;
import io.rlock.MultiLock;
import io.rlock.NotConfirmedException;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.RLockException;
import io.rlock.RPermitExpirableSemaphore;
import io.rlock.ROwnedSemaphore;

/**
 * One actor of a scenario: one owner, which for the Java helper is one thread ({@code <client
 * id>:<thread id>}), so every op of the actor runs on its own thread; a client of its own (as
 * its ACL user); and the op table (clients/spec/README.md, "Which API each operation calls").
 */
final class SpecActor implements AutoCloseable {
    /** An op's result standing for "not granted" (tryLock false, a campaign that ran out). */
    static final Object NOT_ACQUIRED = new Object();

    final String user;
    final RLockClient client;
    /** Handles whose holding the helper reported lost, as {@code <type>:<key>}. */
    final Set<String> lost = ConcurrentHashMap.newKeySet();
    private final Map<String, Long> leases = new HashMap<>();
    private final Map<String, String> permitIds = new HashMap<>();
    private final LinkedBlockingQueue<Runnable> calls = new LinkedBlockingQueue<>();
    private final Thread thread;
    /** Held by the thread while it runs a call: an interrupt never lands between two calls. */
    private final ReentrantLock running = new ReentrantLock();

    SpecActor(String user, String uri) {
        this.user = user;
        this.client = TestClients.create(uri);
        client.addLockLostListener(l -> lost.add(("permits".equals(l.type()) ? "semaphore" : l.type()) + ":" + l.name()));
        thread = new Thread(this::serve, "spec-" + user);
        thread.setDaemon(true);
        thread.start();
    }

    private void serve() {
        while (true) {
            Runnable call;
            try {
                call = calls.take();
            } catch (InterruptedException e) {
                continue; // an interrupt meant for a call that had ended
            }
            if (call == STOP) {
                return;
            }
            running.lock();
            try {
                Thread.interrupted();
                call.run();
            } finally {
                running.unlock();
            }
        }
    }

    private static final Runnable STOP = () -> { };

    /** Runs {@code step} on the actor's thread: its result, or the step's error kind. */
    CompletableFuture<Object> run(Map<String, Object> step) {
        CompletableFuture<Object> done = new CompletableFuture<>();
        calls.add(() -> {
            try {
                done.complete(perform(step));
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
        return done;
    }

    /** Gives up the call under way (an interrupt, as Thread.interrupt() does for a user). */
    void interrupt() {
        thread.interrupt();
    }

    @Override
    public void close() {
        calls.add(STOP);
        client.close();
    }

    /** The error kind of an exception of the helper; null when it is none. */
    static String kindOf(Throwable e) {
        if (e instanceof DeadlockException) {
            return "Deadlock";
        }
        if (e instanceof NotConfirmedException) {
            return "NotConfirmed";
        }
        if (e instanceof IllegalMonitorStateException) {
            return "NotHeld"; // LockLostException is one too
        }
        if (e instanceof RLockException r && "WRONGTYPE".equals(r.code())) {
            return "WrongType";
        }
        if (e instanceof RLockException r && String.valueOf(r.getMessage()).contains("upgrade")) {
            return "UpgradeRefused";
        }
        return null;
    }

    // -- the op table ---------------------------------------------------------------------------

    private Object perform(Map<String, Object> step) throws InterruptedException {
        String op = (String) step.get("op");
        String key = (String) step.get("key");
        switch (op) {
            case "acquire":
                return acquire(step, key);
            case "release":
                release(step, key);
                return null;
            case "guard":
                return SpecRun.plain(client.getLock(key).guard(strings(step.get("command"))));
            case "set_permits":
                return client.getOwnedSemaphore(key).trySetPermits((int) integer(step, "permits", 0));
            case "add_permits": {
                ROwnedSemaphore semaphore = client.getOwnedSemaphore(key);
                semaphore.addPermits((int) integer(step, "permits", 0));
                return (long) semaphore.availablePermits();
            }
            case "available_permits":
                return (long) client.getOwnedSemaphore(key).availablePermits();
            case "set_count":
                return client.getCountDownLatch(key).trySetCount(integer(step, "count", 0));
            case "count_down":
                client.getCountDownLatch(key).countDown();
                return null;
            case "get_count":
                return client.getCountDownLatch(key).getCount();
            case "await_latch":
                return client.getCountDownLatch(key).await(integer(step, "wait_ms", 0), TimeUnit.MILLISECONDS);
            case "acquire_all": {
                MultiLock multi = multi(step);
                if (!multi.tryLock(integer(step, "wait_ms", 0), lease(step, "multilock:" + step.get("keys")), TimeUnit.MILLISECONDS)) {
                    return NOT_ACQUIRED;
                }
                return java.util.Arrays.stream(multi.getTokens()).boxed().toList();
            }
            case "release_all":
                multi(step).unlock();
                return null;
            case "campaign": {
                candidates.put(key, (String) step.get("candidate"));
                long term = client.getElection(key, (String) step.get("candidate"))
                        .campaign(integer(step, "wait_ms", 0), TimeUnit.MILLISECONDS);
                return term < 0 ? NOT_ACQUIRED : term;
            }
            case "leader": {
                Leader leader = client.getElection(key, user).leader();
                return leader == null ? null : Map.of("owner", leader.candidate(), "term", leader.term());
            }
            case "resign":
                client.getElection(key, candidates.get(key)).resign();
                return null;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    /** The candidate each election key was campaigned as, for resign. */
    private final Map<String, String> candidates = new HashMap<>();

    private Object acquire(Map<String, Object> step, String key) throws InterruptedException {
        String type = (String) step.get("type");
        long waitMs = integer(step, "wait_ms", 0);
        long lease = lease(step, type + ":" + key);
        RLockClient client = this.client;
        if (step.get("confirm") instanceof Map<?, ?> confirm) {
            // The same client (same owner) with the step's confirmation.
            client = client.withConfirm(Confirm.replicas(((Number) confirm.get("replicas")).intValue())
                    .timeout(java.time.Duration.ofMillis(((Number) confirm.get("timeout_ms")).longValue())));
        }
        if ("semaphore".equals(type)) {
            int permits = (int) integer(step, "permits", 1);
            if (lease > 0) {
                // A lease is RPermitExpirableSemaphore's (one permit, owned by its permit id).
                RPermitExpirableSemaphore expirable = client.getPermitExpirableSemaphore(key);
                String id = expirable.tryAcquire(waitMs, lease, TimeUnit.MILLISECONDS);
                if (id == null) {
                    return NOT_ACQUIRED;
                }
                permitIds.put(key, id);
                return null; // that type has no token to read
            }
            ROwnedSemaphore semaphore = client.getOwnedSemaphore(key);
            return semaphore.tryAcquire(permits, waitMs, TimeUnit.MILLISECONDS) ? (Object) semaphore.getToken() : NOT_ACQUIRED;
        }
        RLock lock = lock(client, type, key);
        return lock.tryLock(waitMs, lease, TimeUnit.MILLISECONDS) ? (Object) lock.getToken() : NOT_ACQUIRED;
    }

    private void release(Map<String, Object> step, String key) {
        String type = (String) step.get("type");
        if ("semaphore".equals(type)) {
            String id = permitIds.remove(key);
            if (id != null) {
                client.getPermitExpirableSemaphore(key).release(id);
            } else {
                client.getOwnedSemaphore(key).release((int) integer(step, "permits", 1));
            }
            return;
        }
        lock(type, key).unlock();
    }

    private RLock lock(String type, String key) {
        return lock(client, type, key);
    }

    private static RLock lock(RLockClient client, String type, String key) {
        switch (type) {
            case "lock":
                return client.getLock(key);
            case "read":
                return client.getReadWriteLock(key).readLock();
            case "write":
                return client.getReadWriteLock(key).writeLock();
            default:
                throw new IllegalArgumentException("unknown type " + type);
        }
    }

    private MultiLock multi(Map<String, Object> step) {
        List<?> keys = (List<?>) step.get("keys");
        return client.getMultiLock(keys.stream().map(k -> client.getLock((String) k)).toArray(RLock[]::new));
    }

    /** The handle's lease (fixed by its first step, README): -1 for the watchdog. */
    private long lease(Map<String, Object> step, String handle) {
        return leases.computeIfAbsent(handle, h -> integer(step, "lease_ms", -1));
    }

    static long integer(Map<String, Object> step, String field, long otherwise) {
        Object value = step.get(field);
        return value == null ? otherwise : (Long) value;
    }

    private static String[] strings(Object list) {
        return ((List<?>) list).stream().map(String::valueOf).toArray(String[]::new);
    }
}
