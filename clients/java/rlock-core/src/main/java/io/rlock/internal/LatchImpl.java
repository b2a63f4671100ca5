package io.rlock.internal;

import io.rlock.*;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

public final class LatchImpl extends Handle implements RCountDownLatch {
    public LatchImpl(Engine engine, String name) {
        super(engine, name);
    }

    @Override
    public boolean trySetCount(long count) {
        if (count < 1) {
            throw new IllegalArgumentException("a count of at least 1");
        }
        // With an id: re-sent after a lost reply, the call that set the latch answers 1 again.
        return Long.valueOf(1).equals(engine.write(name, "RLATCH.SET", name, count, "ID", Engine.requestId()));
    }

    @Override
    public void countDown() {
        engine.write(name, "RLATCH.COUNTDOWN", name, "ID", Engine.requestId());
    }

    @Override
    public long getCount() {
        return Replies.number(engine.call(name, "RLATCH.COUNT", name), 0);
    }

    @Override
    public void await() throws InterruptedException {
        engine.waits().awaitLatch(name, -1);
    }

    @Override
    public boolean await(long time, TimeUnit unit) throws InterruptedException {
        return engine.waits().awaitLatch(name, LockImpl.waitMillis(time, unit));
    }

    @Override
    public CompletableFuture<Void> awaitAsync() {
        return engine.async(() -> {
            await();
            return null;
        });
    }

    @Override
    public CompletableFuture<Boolean> awaitAsync(long time, TimeUnit unit) {
        return engine.async(() -> await(time, unit));
    }

    @Override
    public CompletableFuture<Void> countDownAsync() {
        return engine.async(() -> {
            countDown();
            return null;
        });
    }

    @Override
    public CompletableFuture<Long> getCountAsync() {
        return engine.async(this::getCount);
    }

    @Override
    public CompletableFuture<Boolean> trySetCountAsync(long count) {
        return engine.async(() -> trySetCount(count));
    }
}
