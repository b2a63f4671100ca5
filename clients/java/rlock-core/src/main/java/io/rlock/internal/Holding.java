package io.rlock.internal;

import io.rlock.*;

/** What this client knows of one holding: a thread's lock, read or write hold, or permits. */
public final class Holding {
    final Target target;
    final Node node;
    final long token;
    final boolean watchdog;
    final long leaseMs;
    /** Hold count (locks) or permits held (semaphores), as the server last said. */
    volatile long count;
    /**
     * System.nanoTime() after which a plain lease has surely ended (Long.MAX_VALUE for the
     * watchdog): the holding is then forgotten, so that leases left to run out leave nothing here.
     */
    volatile long expires;
    private volatile boolean lost;
    /**
     * System.nanoTime() when a re-bind under Sentinel or Cluster was answered "not held" (0: not
     * suspected): lost only once the key's primary, as the topology names it, says so too.
     */
    volatile long suspectedAt;

    Holding(Target target, Node node, long token, boolean watchdog, long leaseMs, long count) {
        this.target = target;
        this.node = node;
        this.token = token;
        this.watchdog = watchdog;
        this.leaseMs = leaseMs;
        this.count = count;
        this.expires = watchdog ? Long.MAX_VALUE : System.nanoTime() + leaseMs * 1_000_000L;
    }

    Holding(Target target, Node node, long token, boolean watchdog, long leaseMs, long count, long expires) {
        this(target, node, token, watchdog, leaseMs, count);
        this.expires = expires;
    }

    boolean isLost() {
        return lost;
    }

    /** A re-bind found it missing: suspected from now, unless it already was. */
    synchronized void suspect() {
        if (suspectedAt == 0) {
            suspectedAt = Math.max(1, System.nanoTime());
        }
    }

    /** Marks it lost; true the first time. */
    synchronized boolean markLost() {
        if (lost) {
            return false;
        }
        lost = true;
        return true;
    }
}
