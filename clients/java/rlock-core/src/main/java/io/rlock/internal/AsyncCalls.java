package io.rlock.internal;

import io.rlock.*;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The async API (Redisson's {@code ...Async} methods, returning a {@link CompletableFuture}, a
 * {@code CompletionStage} as Redisson's {@code RFuture} is): the blocking call, run on one of
 * the client's daemon threads. Only for calls that belong to no thread (latches, permit ids);
 * a thread's lock holdings are taken on that thread.
 */
public final class AsyncCalls {
    private final ExecutorService pool;

    AsyncCalls(String clientId) {
        pool = Executors.newCachedThreadPool(runnable -> {
            Thread thread = new Thread(runnable, "rlock-async " + clientId);
            thread.setDaemon(true);
            return thread;
        });
    }

    <T> CompletableFuture<T> submit(Callable<T> call) {
        CompletableFuture<T> future = new CompletableFuture<>();
        try {
            pool.execute(() -> {
                try {
                    future.complete(call.call());
                } catch (Throwable e) {
                    future.completeExceptionally(e);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            future.completeExceptionally(Engine.closedException());
        }
        return future;
    }

    void close() {
        pool.shutdownNow();
    }
}
