/**
 * Redlock's vote: one operation sent to N independent servers at once, granted when a
 * majority (N/2 + 1) voted for it. Shared by `Redlock` and any other lock built over
 * independent servers, so that the majority rule and the per-attempt record live here only.
 *
 * The record is redlock's `ExecutionStats` (its users read it from `ExecutionError.attempts`
 * and `lock.attempts`): which members voted for, and the error of each that voted against.
 */

import { ConnectionFailure, publicError } from './errors';

export interface ExecutionStats {
  readonly membershipSize: number;
  readonly quorumSize: number;
  /** The clients (as the user gave them) whose server granted the operation. */
  readonly votesFor: Set<unknown>;
  /** The clients whose server refused or failed, with the error that says why. */
  readonly votesAgainst: Map<unknown, Error>;
}

/** What `Redlock.release` resolves with, as redlock's: the stats of each attempt made. */
export interface ExecutionResult {
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
}

export interface Round<T> {
  /** A majority voted for. */
  readonly granted: boolean;
  /**
   * Per member, in order: what its ballot returned, or undefined where it voted against (or,
   * in a round decided early, has not answered yet: filled in when it does).
   */
  readonly results: Array<T | undefined>;
  /** The votes counted so far (every vote, unless the round was decided early). */
  readonly stats: ExecutionStats;
  /** The stats once every vote is in: what redlock's `attempts` hold. */
  readonly settled: Promise<ExecutionStats>;
}

/**
 * The error recorded for a vote against: where the server could not be reached, the driver's
 * own error (as redlock records it, e.g. ioredis's "Connection is closed."), else rlock's.
 */
function voteError(reason: unknown): Error {
  if (reason instanceof ConnectionFailure && reason.cause instanceof Error) return reason.cause;
  return publicError(reason);
}

/** The majority of `members` members. */
export function quorumSize(members: number): number {
  return Math.floor(members / 2) + 1;
}

/**
 * Runs `ballot` on every member at once and counts the votes: a ballot that resolves votes
 * for, one that rejects (or throws) votes against (its error is recorded). Resolves once every
 * ballot has settled: callers bound each ballot's time themselves, and need every answer to
 * give back what a failed round was granted.
 *
 * `early`: resolves as soon as a majority voted for, as redlock's rounds do; the votes still
 * out go on being counted into `stats` and `results`, and `settled` resolves when the last is
 * in. A round that is not granted is only decided when every vote is in, so what it was
 * granted can be given back. Waiting for the slowest of N servers on every granted round cost
 * an uncontended Redlock pair a read and an event-loop turn more than redlock's (whose reads
 * of the slowest server batch several replies), and the slowest server's latency.
 */
export function quorumRound<T>(
  members: readonly unknown[],
  ballot: (member: unknown, index: number) => Promise<T>,
  early = false,
): Promise<Round<T>> {
  return countVotes(
    members,
    (member, index, vote) => {
      let ballotOf: Promise<T>;
      try {
        ballotOf = ballot(member, index);
      } catch (err) {
        ballotOf = Promise.reject(err);
      }
      ballotOf.then(vote.for, vote.against);
    },
    early,
  );
}

/** One member's vote, cast once: what comes after the first call is not counted. */
export interface Vote<T> {
  for(value: T): void;
  against(reason: unknown): void;
}

/**
 * `quorumRound` for callers that cast each vote themselves (`cast` calls `vote.for` or
 * `vote.against`, once; later calls are ignored): no promise per ballot, which Redlock's
 * acquire, bounding each vote's time itself, would otherwise wrap in one more.
 *
 * `awaited`: the index of a member whose vote an early decision also waits for (the Redlock's
 * queue server, whose refusal vetoes a majority: redlockqueue.ts); -1, none.
 */
export function countVotes<T>(
  members: readonly unknown[],
  cast: (member: unknown, index: number, vote: Vote<T>) => void,
  early = false,
  awaited = -1,
): Promise<Round<T>> {
  const stats: ExecutionStats = {
    membershipSize: members.length,
    quorumSize: quorumSize(members.length),
    votesFor: new Set(),
    votesAgainst: new Map(),
  };
  const results = new Array<T | undefined>(members.length).fill(undefined);
  return new Promise((resolve) => {
    let out = members.length;
    let decided = false;
    let allIn: (stats: ExecutionStats) => void = () => {};
    const settled = early && out > 0 ? new Promise<ExecutionStats>((done) => (allIn = done)) : Promise.resolve(stats);
    const counted = () => {
      out--;
      const awaitedIn = awaited < 0 || results[awaited] !== undefined || stats.votesAgainst.has(members[awaited]);
      if (!decided && (out === 0 || (early && awaitedIn && stats.votesFor.size >= stats.quorumSize))) {
        decided = true;
        resolve({ granted: stats.votesFor.size >= stats.quorumSize, results, stats, settled });
      }
      if (out === 0) allIn(stats);
    };
    if (!out) resolve({ granted: false, results, stats, settled });
    members.forEach((member, index) => {
      let voted = false;
      const vote: Vote<T> = {
        for: (value) => {
          if (voted) return;
          voted = true;
          results[index] = value;
          stats.votesFor.add(member);
          counted();
        },
        against: (reason) => {
          if (voted) return;
          voted = true;
          stats.votesAgainst.set(member, voteError(reason));
          counted();
        },
      };
      try {
        cast(member, index, vote);
      } catch (err) {
        vote.against(err);
      }
    });
  });
}
