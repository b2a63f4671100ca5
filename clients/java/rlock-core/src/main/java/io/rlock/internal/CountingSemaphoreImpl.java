package io.rlock.internal;

import io.rlock.*;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link RSemaphore} over {@code RCSEM.*}: one command per method (docs/counting.md). A wait is
 * told by message ({@code NOTIFY}), the waiter known to the server by its request id.
 */
public final class CountingSemaphoreImpl extends Handle implements RSemaphore {
    public CountingSemaphoreImpl(Engine engine, String name) {
        super(engine, name);
    }

    @Override
    public boolean trySetPermits(int permits) {
        return Long.valueOf(1).equals(engine.write(name, "RCSEM.SETPERMITS", name, (long) permits, "ID", Engine.requestId()));
    }

    @Override
    public boolean trySetPermits(int permits, Duration timeToLive) {
        if (!trySetPermits(permits)) {
            return false;
        }
        expire(timeToLive);
        return true;
    }

    @Override
    public void addPermits(int permits) {
        engine.write(name, "RCSEM.ADDPERMITS", name, (long) permits, "ID", Engine.requestId());
    }

    @Override
    public int availablePermits() {
        return (int) Replies.number(engine.call(name, "RCSEM.AVAILABLE", name), 0);
    }

    @Override
    public int drainPermits() {
        return (int) Replies.number(engine.write(name, "RCSEM.DRAIN", name), 0);
    }

    @Override
    public void acquire() throws InterruptedException {
        acquire(1);
    }

    @Override
    public void acquire(int permits) throws InterruptedException {
        take(permits, -1, true);
    }

    @Override
    public boolean tryAcquire() {
        return tryAcquire(1);
    }

    @Override
    public boolean tryAcquire(int permits) {
        try {
            return take(permits, 0, false);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public boolean tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
        return tryAcquire(1, waitTime, unit);
    }

    @Override
    public boolean tryAcquire(Duration waitTime) throws InterruptedException {
        return tryAcquire(1, waitTime);
    }

    @Override
    public boolean tryAcquire(int permits, long waitTime, TimeUnit unit) throws InterruptedException {
        return take(permits, LockImpl.waitMillis(waitTime, unit), true);
    }

    @Override
    public boolean tryAcquire(int permits, Duration waitTime) throws InterruptedException {
        return tryAcquire(permits, waitTime.toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void release() {
        release(1);
    }

    @Override
    public void release(int permits) {
        if (check(permits) > 0) {
            engine.write(name, Family.COUNTING.release(name, null, permits, Engine.requestId()));
        }
    }

    @Override
    public boolean releaseIfExists(int permits) {
        if (!isExists()) {
            return false;
        }
        release(permits);
        return true;
    }

    @Override
    public boolean expire(Duration timeToLive) {
        return Replies.number(engine.write(name, "PEXPIRE", name, Math.max(1, timeToLive.toMillis())), 0) > 0;
    }

    private static int check(int permits) {
        if (permits < 0) {
            throw new IllegalArgumentException("permits can't be negative");
        }
        return permits;
    }

    /**
     * {@code RCSEM.ACQUIRE}: true when granted. {@code waitMs} -1: without a deadline; 0: one
     * attempt. As {@link Acquire}, but nothing is held afterwards: no holding to record or renew.
     * Every grant is confirmed by the replicas (when the client confirms) and undone when it is
     * not; a grant told by message, written by another connection, is confirmed by its retry
     * ({@link #confirmGrant}).
     */
    private boolean take(int permits, long waitMs, boolean interruptible) throws InterruptedException {
        if (check(permits) == 0) {
            return true; // as Redisson: no call
        }
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException();
        }
        waitMs = Engine.forever(waitMs);
        String requestId = Engine.requestId();
        if (waitMs == 0) {
            try {
                return granted(engine.router().write(engine.confirm, name, args(permits, Family.NO_WAIT, 0, requestId)).value());
            } catch (Unconfirmed e) {
                throw undo(e.node, e, permits);
            }
        }
        long deadline = Engine.deadline(waitMs);
        PinnedCall call = new PinnedCall(engine, name);
        boolean[] interrupted = {false};
        try {
            while (true) {
                Target target = new Target(Family.COUNTING, name, requestId);
                Node.Session session = call.session();
                long waitArg = Engine.waitArg(deadline);
                boolean over = waitArg == Family.NO_WAIT;
                List<Waiter> waiters = over ? List.of()
                        : List.of(engine.dispatcher().register(target, call.node, session.generation, deadline));
                Object reply;
                try {
                    reply = call.send(session, waiters, args(permits, waitArg, session.notifyId, requestId), engine.confirm);
                } catch (Unconfirmed e) {
                    waiters.forEach(engine.dispatcher()::unregister); // granted at once: no message comes
                    throw undo(call.node, e, permits);
                }
                if (reply == PinnedCall.RESEND) {
                    continue; // the same request id: the server counts it once
                }
                if ("WAITING".equals(reply)) {
                    Event event = engine.waits().park(waiters.get(0), session, interruptible, deadline, interrupted,
                            () -> engine.releaseQuietly(waiters.get(0).node, target, permits));
                    if (event.kind == Event.Kind.GRANTED) {
                        if (confirmGrant(call.node, call.asked, permits, requestId)) {
                            return true;
                        }
                        requestId = Engine.requestId(); // the grant was not found again: ask anew
                        continue;
                    }
                    if (event.kind == Event.Kind.TIMEOUT) {
                        return false;
                    }
                    if (engine.waits().retry(event, call, interruptible, interrupted, "semaphore " + name)) {
                        continue;
                    }
                }
                waiters.forEach(engine.dispatcher()::unregister);
                if (call.follow(reply)) {
                    continue;
                }
                return granted(reply);
            }
        } finally {
            if (interrupted[0]) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Confirms a grant told by message: the retry of the grant ({@code RCSEM.ACQUIRE ... ID <the
     * same id>}, no wait), which the server answers from its memory without taking again and
     * which propagates a {@code PING}, pipelined with {@code WAIT}: a replica that acknowledges
     * it has the grant. Not confirmed: undone, {@link NotConfirmedException}. False when the
     * server no longer knows the grant (a failover since: its memory is its own) and the retry
     * found no permits either; then nothing is taken by this request.
     */
    private boolean confirmGrant(Node node, boolean asking, int permits, String requestId) {
        if (!node.confirms(engine.confirm)) {
            return true;
        }
        try {
            return granted(engine.router().call(node, asking, engine.confirm, name,
                    args(permits, Family.NO_WAIT, 0, requestId)).value());
        } catch (Unconfirmed e) {
            throw undo(e.node, e, permits);
        }
    }

    /** A grant not confirmed in time: its permits given back (a release with its own request id), and reported. */
    private NotConfirmedException undo(Node node, Unconfirmed unconfirmed, int permits) {
        engine.releaseQuietly(node, new Target(Family.COUNTING, name, null), permits);
        return unconfirmed.report("the acquisition of " + permits + " permits of semaphore " + name, true);
    }

    private static boolean granted(Object reply) {
        return Replies.check(reply) != null;
    }

    /** {@code RCSEM.ACQUIRE key PERMITS n [WAIT ms NOTIFY [id]] ID id}. */
    private Object[] args(int permits, long waitMs, long notifyId, String requestId) {
        if (waitMs == Family.NO_WAIT) {
            return new Object[] {"RCSEM.ACQUIRE", name, "PERMITS", (long) permits, "ID", requestId};
        }
        return notifyId == Family.NOTIFY_SELF
                ? new Object[] {"RCSEM.ACQUIRE", name, "PERMITS", (long) permits, "WAIT", waitMs, "NOTIFY", "ID", requestId}
                : new Object[] {"RCSEM.ACQUIRE", name, "PERMITS", (long) permits, "WAIT", waitMs, "NOTIFY", notifyId, "ID", requestId};
    }

    @Override
    public String toString() {
        return "semaphore " + name;
    }
}
