package io.rlock;

import io.rlock.internal.*;

/**
 * Who leads an election now, as {@code RLOCK.LEADER} answers.
 *
 * @param candidate the leader's candidate id (what it passed to {@link RLockClient#getElection})
 * @param term      its term: the holding's fencing token, larger than every term before it (-1 for
 *                  a lock a Redisson client took, which has no token)
 * @param ttl       ms left of its lease as the server read it (renewed by the watchdog while the
 *                  leader's connection lives)
 */
public record Leader(String candidate, long term, long ttl) {
    /** Same candidate and term: the same leadership, whatever its lease. */
    boolean sameAs(Leader other) {
        return other != null && candidate.equals(other.candidate) && term == other.term;
    }
}
