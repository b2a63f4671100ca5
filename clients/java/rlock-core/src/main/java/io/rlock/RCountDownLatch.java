package io.rlock;

import io.rlock.internal.*;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A count-down latch shared through Redis (Redisson's {@code RCountDownLatch}). */
public interface RCountDownLatch {
    String getName();

    /** Sets the count if the latch is not set; true when it set it. */
    boolean trySetCount(long count);

    /** One down (retry-safe: a call re-sent after a dropped connection counts once). */
    void countDown();

    long getCount();

    /** Waits until the count reaches 0 (returns at once when the latch is open or unset). */
    void await() throws InterruptedException;

    /** As {@link #await()}, at most {@code time}: true when open. */
    boolean await(long time, TimeUnit unit) throws InterruptedException;

    /** Removes the latch (its count); true when it existed. Its waiters stay until their timeout. */
    boolean delete();

    boolean isExists();

    CompletableFuture<Void> awaitAsync();

    CompletableFuture<Boolean> awaitAsync(long time, TimeUnit unit);

    CompletableFuture<Void> countDownAsync();

    CompletableFuture<Long> getCountAsync();

    CompletableFuture<Boolean> trySetCountAsync(long count);
}
