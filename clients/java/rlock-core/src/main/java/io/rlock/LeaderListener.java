package io.rlock;

import io.rlock.internal.*;

/**
 * Told by {@link Election#observe} of each change of leader: a new leader, a new term of the same
 * candidate, or none (null). Called on the observation's own thread, in order; keep it short.
 */
@FunctionalInterface
public interface LeaderListener {
    void leaderChanged(Leader leader);
}
