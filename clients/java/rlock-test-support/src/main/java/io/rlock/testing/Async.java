package io.rlock.testing;

import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import io.rlock.RLock;

/** Runs work on a new thread each time (owner ids are per thread: pools would reuse them). */
public final class Async {
    private Async() {
    }

    public static <T> CompletableFuture<T> call(Callable<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        start(() -> {
            try {
                result.complete(work.call());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }

    public interface Body {
        void run() throws Exception;
    }

    public static CompletableFuture<Void> run(Body work) {
        return call(() -> {
            work.run();
            return null;
        });
    }

    /** A wait on a thread of its own, for the test to interrupt once it is queued. */
    public record Interruptible(Thread thread, CompletableFuture<Void> done) {
        public void interrupt() {
            thread.interrupt();
        }
    }

    /** Runs {@code wait}; {@code done} completes when it threw InterruptedException, and fails otherwise. */
    public static Interruptible interruptible(Body wait) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        // Started here rather than through call(): the test needs the thread, known before it runs.
        Thread thread = start(() -> {
            try {
                assertThrows(InterruptedException.class, wait::run);
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
        return new Interruptible(thread, done);
    }

    /** Takes {@code lock} (waiting as long as it takes) and gives it back: its fencing token. */
    public static CompletableFuture<Long> grantedToken(RLock lock) {
        return call(() -> {
            lock.lock();
            long token = lock.getToken();
            lock.unlock();
            return token;
        });
    }

    private static Thread start(Runnable body) {
        Thread thread = new Thread(body);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }
}
