package io.rlock.testing;

import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.LostLock;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.internal.transport.Connection;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Issue 41's lost lock: a thread interrupted while it waits for a reply on its client's session
 * must not end that session, since the server ends every watchdog holding bound to it (with no
 * grace: at once, and the next waiter is granted). The check, run by each transport's tests:
 * {@code holder} holds {@code <key>:held} with the watchdog; the server is stopped (SIGSTOP) so
 * that a second thread of {@code holder}, asking for {@code <key>:taken} (held by {@code other})
 * with a wait, is seen parked inside the session connection waiting for the reply; it is
 * interrupted and the server resumed. The interrupted call ends in InterruptedException, leaves
 * no queued entry, and {@code <key>:held} is still bound to the same session with the same token,
 * refused to {@code other}, and no loss reported.
 */
public final class InterruptedReplyWait {
    private static final long PATIENCE_MS = 30_000;

    private InterruptedReplyWait() {
    }

    public static void check(RedisServer server, RLockClient holder, RLockClient other, String key) throws Exception {
        try (AdminConnection admin = server.admin()) {
            Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "0");
            List<LostLock> lost = new CopyOnWriteArrayList<>();
            holder.addLockLostListener(lost::add);
            RLock held = holder.getLock(key + ":held");
            held.lock();
            Map<String, Object> before = Admin.info(admin, "RLOCK.INFO", key + ":held");
            assertThat(before.get("watchdog")).as("a watchdog holding, bound to the session").isNotNull();
            RLock taken = other.getLock(key + ":taken");
            taken.lock();

            Async.Interruptible waiter;
            signal(server, "STOP");
            try {
                waiter = Async.interruptible(() -> holder.getLock(key + ":taken").tryLock(PATIENCE_MS, TimeUnit.MILLISECONDS));
                eventually(PATIENCE_MS, "the second thread waiting for a reply on the session",
                        () -> waitingInAConnection(waiter.thread()));
                waiter.interrupt();
            } finally {
                signal(server, "CONT");
            }
            // Its outcome, checked last: a lost holding is the failure to see first.
            Throwable outcome = waiter.done().handle((threw, failure) -> failure).get(PATIENCE_MS, TimeUnit.MILLISECONDS);

            assertThat(Admin.waiters(admin, key + ":taken")).as("the interrupted wait left the queue").isZero();
            Map<String, Object> after = Admin.info(admin, "RLOCK.INFO", key + ":held");
            assertThat(after).as("still held").isNotNull();
            assertThat(after.get("watchdog")).as("bound to the same session").isEqualTo(before.get("watchdog"));
            assertThat(after.get("token")).as("the same holding").isEqualTo(before.get("token"));
            assertThat(Async.call(() -> other.getLock(key + ":held").tryLock()).get(PATIENCE_MS, TimeUnit.MILLISECONDS))
                    .as("refused to another client").isFalse();
            assertThat(held.isHeldByCurrentThread()).isTrue();
            assertThat(lost).as("no loss").isEmpty();
            assertThat(outcome).as("the interrupted call threw InterruptedException").isNull();
            held.unlock();
            taken.unlock();
        }
    }

    /**
     * Parked (not running, not blocked on a monitor) inside a session connection's method, or in
     * the engine's wait for a waiting call's reply that the connection hands to its waiter
     * ({@code Waiter.awaitReply}: a waiting acquire written without blocking, issue 46).
     */
    private static boolean waitingInAConnection(Thread thread) {
        Thread.State state = thread.getState();
        if (state != Thread.State.WAITING && state != Thread.State.TIMED_WAITING) {
            return false;
        }
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals("io.rlock.internal.Waiter") && frame.getMethodName().equals("awaitReply")) {
                return true;
            }
            try {
                Class<?> type = Class.forName(frame.getClassName(), false, thread.getContextClassLoader());
                if (Connection.class.isAssignableFrom(type)) {
                    return true;
                }
            } catch (ClassNotFoundException | LinkageError e) {
                // a frame of a class this loader does not see: not a connection's
            }
        }
        return false;
    }

    private static void signal(RedisServer server, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(server.process().pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IOException("kill -" + signal + " of the server exited with " + kill.exitValue());
        }
    }
}
