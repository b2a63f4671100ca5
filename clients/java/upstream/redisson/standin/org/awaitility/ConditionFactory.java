package org.awaitility;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Stand-in for Awaitility's {@code ConditionFactory}, with only the calls the vendored Redisson
 * tests make: polls a condition (every 100 ms, Awaitility's default, after an optional first
 * delay) until it holds, failing with {@link ConditionTimeoutException} after {@code atMost}
 * (10 s by default, as Awaitility's) or when it holds before {@code between}'s lower bound. As
 * Awaitility by default, the condition runs on a thread of its own, not the test's: it matters
 * for locks, which a thread re-enters.
 */
public final class ConditionFactory {
    private long atLeastNanos;
    private long atMostNanos = TimeUnit.SECONDS.toNanos(10);
    private long pollDelayNanos;
    private static final long POLL_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    /** An assertion that may throw anything, as Awaitility's {@code ThrowingRunnable}. */
    @FunctionalInterface
    public interface ThrowingRunnable {
        void run() throws Throwable;
    }

    public ConditionFactory atMost(long time, TimeUnit unit) {
        atMostNanos = unit.toNanos(time);
        return this;
    }

    public ConditionFactory atMost(Duration time) {
        atMostNanos = time.toNanos();
        return this;
    }

    public ConditionFactory between(Duration atLeast, Duration atMost) {
        atLeastNanos = atLeast.toNanos();
        atMostNanos = atMost.toNanos();
        return this;
    }

    public ConditionFactory between(long atLeast, TimeUnit atLeastUnit, long atMost, TimeUnit atMostUnit) {
        return between(Duration.ofNanos(atLeastUnit.toNanos(atLeast)), Duration.ofNanos(atMostUnit.toNanos(atMost)));
    }

    public ConditionFactory pollDelay(Duration delay) {
        pollDelayNanos = delay.toNanos();
        return this;
    }

    public void until(Callable<Boolean> condition) {
        poll(() -> Boolean.TRUE.equals(condition.call()) ? null : new AssertionError("the condition is false"));
    }

    public void untilTrue(AtomicBoolean flag) {
        until(flag::get);
    }

    public void untilAsserted(ThrowingRunnable assertion) {
        poll(() -> {
            try {
                assertion.run();
                return null;
            } catch (AssertionError e) {
                return e;
            }
        });
    }

    /** A check: null when the condition holds, else why not. */
    private interface Check {
        Throwable run() throws Throwable;
    }

    private void poll(Check check) {
        ExecutorService pollThread = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "awaitility-thread");
            thread.setDaemon(true);
            return thread;
        });
        try {
            poll(check, pollThread);
        } finally {
            pollThread.shutdownNow();
        }
    }

    private void poll(Check check, ExecutorService pollThread) {
        long start = System.nanoTime();
        Throwable last;
        try {
            if (pollDelayNanos > 0) {
                TimeUnit.NANOSECONDS.sleep(pollDelayNanos);
            }
            while (true) {
                Future<Throwable> result = pollThread.submit(() -> {
                    try {
                        return check.run();
                    } catch (Exception | Error e) {
                        throw e;
                    } catch (Throwable e) {
                        throw new ExecutionException(e);
                    }
                });
                try {
                    last = result.get(Math.max(1, atMostNanos - (System.nanoTime() - start)), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    last = new AssertionError("the condition was still being evaluated");
                } catch (ExecutionException e) {
                    throw e.getCause();
                }
                long elapsed = System.nanoTime() - start;
                if (last == null) {
                    if (elapsed < atLeastNanos) {
                        throw new ConditionTimeoutException("the condition held after " + elapsed / 1_000_000
                                + " ms, earlier than the expected " + atLeastNanos / 1_000_000 + " ms");
                    }
                    return;
                }
                if (elapsed > atMostNanos) {
                    break;
                }
                TimeUnit.NANOSECONDS.sleep(Math.min(POLL_INTERVAL_NANOS, Math.max(1, atMostNanos - elapsed)));
            }
        } catch (ConditionTimeoutException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
        ConditionTimeoutException timeout = new ConditionTimeoutException(
                "the condition did not hold within " + atMostNanos / 1_000_000 + " ms: " + last.getMessage());
        timeout.initCause(last);
        throw timeout;
    }
}
