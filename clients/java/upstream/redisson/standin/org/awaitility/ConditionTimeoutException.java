package org.awaitility;

/** Awaitility's failure: the condition did not hold in time (or held too early). */
public class ConditionTimeoutException extends RuntimeException {
    public ConditionTimeoutException(String message) {
        super(message);
    }
}
