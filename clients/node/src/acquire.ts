/**
 * The acquire step for one key or all-or-none over several: one attempt, or a wait by message
 * (NOTIFY), with one request id for its retry, and the grant's confirmation by the replicas.
 */

import { Confirm, Unconfirmed } from './confirm';
import { Arg } from './drivers/driver';
import { requestId } from './request';
import { Called, Session } from './session';
import { FirstAttempt } from './wait';

/** What one acquire asks of the server: the acquire step, one attempt or a wait by message. */
export interface AcquireRequest {
  /** The command with request id `id`, and `WAIT ms NOTIFY clientId` when it waits. */
  args(id: string, wait?: { ms: number; clientId: number }): Arg[];
  /** One per key, in the order of the reply's tokens (messages name them). */
  targets: string[];
  /** 0: one attempt; undefined: no limit. */
  waitMs: number | undefined;
  signal?: AbortSignal;
  /** `RLOCK.CANCEL key owner`: one cancel takes a request out of every key's queue. */
  cancel: Arg[];
  /** What gives back a grant that raced a cancel (null: the key's default release). */
  release: Arg[] | null;
  timeout: number;
  /** Confirmation by the replicas of a grant in the call's reply. */
  confirm: Confirm | null;
}

export interface Granted {
  /** One per target. */
  tokens: number[];
  /**
   * Whether a watchdog grant must be confirmed (`RENEW ... WATCHDOG`): one told by message is
   * bound to the subscriber, a retried call's may be bound to the connection that broke.
   */
  confirm: boolean;
  /** Granted in the call's reply and acknowledged by too few replicas (`confirm` false). */
  unconfirmed?: Unconfirmed;
  /** The Session it was granted on: another Cluster primary's when the key's slot moved. */
  session: Session;
}

/**
 * An acquire's first attempt, sent by its caller already with request id `id` (`Holder`'s
 * quick acquire); a waiting one also names its subscriber and registered waiters.
 */
export interface SentFirst extends Partial<FirstAttempt> {
  id: string;
  called: Promise<Called>;
}

/** Appends the options every acquire ends with to `args`: `PX lease [WAIT ms NOTIFY id] [WATCHDOG] ID id [MAXHOLD ms]`. */
export function acquireTail(
  args: Arg[],
  o: {
    lease: number;
    watchdog: boolean;
    id: string;
    wait?: { ms: number; clientId: number };
    maxHold?: number;
  },
): Arg[] {
  args.push('PX', o.lease);
  if (o.wait) args.push('WAIT', o.wait.ms, 'NOTIFY', o.wait.clientId);
  if (o.watchdog) args.push('WATCHDOG');
  args.push('ID', o.id);
  if (o.maxHold !== undefined) args.push('MAXHOLD', o.maxHold);
  return args;
}

/**
 * The acquire step for one key or all-or-none over several (`RLOCK.ACQUIREALL`), with one
 * request id for its retry: the tokens, or null when not granted (within the wait).
 */
export async function acquire(session: Session, request: AcquireRequest, first?: SentFirst): Promise<Granted | null> {
  const id = first?.id ?? requestId();
  const { waitMs, signal } = request;
  if (waitMs !== undefined && waitMs <= 0) {
    if (!first) signal?.throwIfAborted();
    const called = await (first?.called ?? session.callEx(request.args(id), request.timeout, true, request.confirm));
    const reply = called.reply;
    if (reply === null || reply === undefined) return null;
    const tokens = Array.isArray(reply) ? reply.map(Number) : [Number(reply)];
    // A retried call's replayed reply wrote nothing on this connection: confirmed by RENEW.
    return { tokens, confirm: called.retried, unconfirmed: called.retried ? undefined : called.unconfirmed, session: called.session };
  }
  const targets = request.targets;
  const waited = await session.waitFor(
    {
      target: targets[0],
      more: targets.length > 1 ? targets.slice(1) : undefined,
      build: (clientId, ms) => request.args(id, { ms, clientId }),
      waitMs,
      signal,
      cancel: request.cancel,
      release: request.release,
      timeout: request.timeout,
      confirm: request.confirm,
    },
    first?.waiters ? (first as FirstAttempt) : undefined,
  );
  if (!waited) return null;
  const confirm = waited.queued || waited.retried;
  return { tokens: waited.tokens, confirm, unconfirmed: confirm ? undefined : waited.unconfirmed, session: waited.session };
}
