package io.rlock.internal;

import io.rlock.*;

/** One thread's wait in a server queue, told its outcome by the dispatcher. */
public final class Waiter {
    final Target target;
    final Node node;
    final long generation;
    /** System.nanoTime() deadline of the server's WAIT (Long.MAX_VALUE: none). */
    final long deadline;
    private Event outcome;

    Waiter(Target target, Node node, long generation, long deadline) {
        this.target = target;
        this.node = node;
        this.generation = generation;
        this.deadline = deadline;
    }

    /** The first outcome wins; returns whether this one was taken. */
    synchronized boolean complete(Event event) {
        if (outcome != null) {
            return false;
        }
        outcome = event;
        notifyAll();
        return true;
    }

    synchronized Event outcome() {
        return outcome;
    }

    /** The outcome, or null after {@code nanos}. */
    synchronized Event await(long nanos) throws InterruptedException {
        long end = nanos == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + nanos;
        while (outcome == null) {
            if (end == Long.MAX_VALUE) {
                wait();
            } else {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                wait(left / 1_000_000, (int) (left % 1_000_000));
            }
        }
        return outcome;
    }
}
