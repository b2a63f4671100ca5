package org.awaitility;

/** Stand-in for Awaitility's entry point: {@code await()}, nothing else. */
public final class Awaitility {
    private Awaitility() {
    }

    public static ConditionFactory await() {
        return new ConditionFactory();
    }
}
