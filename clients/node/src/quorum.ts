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
  /** Per member, in order: what its ballot returned, or undefined where it voted against. */
  readonly results: Array<T | undefined>;
  readonly stats: ExecutionStats;
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
 * for, one that rejects votes against (its error is recorded). Resolves once every ballot has
 * settled: callers bound each ballot's time themselves, and need every answer to give back
 * what a failed round was granted.
 */
export async function quorumRound<T>(
  members: readonly unknown[],
  ballot: (member: unknown, index: number) => Promise<T>,
): Promise<Round<T>> {
  const settled = await Promise.allSettled(members.map((member, index) => ballot(member, index)));
  const stats: ExecutionStats = {
    membershipSize: members.length,
    quorumSize: quorumSize(members.length),
    votesFor: new Set(),
    votesAgainst: new Map(),
  };
  const results = settled.map((outcome, index) => {
    if (outcome.status === 'fulfilled') {
      stats.votesFor.add(members[index]);
      return outcome.value;
    }
    stats.votesAgainst.set(members[index], voteError(outcome.reason));
    return undefined;
  });
  return { granted: stats.votesFor.size >= stats.quorumSize, results, stats };
}
