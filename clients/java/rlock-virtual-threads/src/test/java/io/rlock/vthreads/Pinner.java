package io.rlock.vthreads;

import java.util.concurrent.CountDownLatch;

/**
 * Pins a virtual thread's carrier on purpose: a virtual thread that blocks inside a class
 * initializer cannot unmount (JDK 25 still pins there), so each of these classes, initialized by
 * its own virtual thread, takes one carrier away until {@link #RELEASE} is counted down.
 */
final class Pinner {
    static final CountDownLatch RELEASE = new CountDownLatch(1);
    /** Counted down by each pinned initializer once it runs (its carrier is taken from then on). */
    static final CountDownLatch PINNED = new CountDownLatch(2);

    private Pinner() {
    }

    static void await() {
        PINNED.countDown();
        try {
            RELEASE.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static final class First {
        static {
            await();
        }

        static void touch() {
        }
    }

    static final class Second {
        static {
            await();
        }

        static void touch() {
        }
    }
}
