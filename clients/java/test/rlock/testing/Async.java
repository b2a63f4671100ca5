package rlock.testing;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

/** Runs work on a new thread each time (owner ids are per thread: pools would reuse them). */
public final class Async {
    private Async() {
    }

    public static <T> CompletableFuture<T> call(Callable<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                result.complete(work.call());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        thread.setDaemon(true);
        thread.start();
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
}
