/**
 * Redlock's contenders served in order (issue 46): the pause between two attempts is spent in
 * the FIFO queue of one server, the same for every client (the first of the configured list,
 * "the queue server"), instead of asleep.
 *
 * - The first attempt of an `acquire` is Redlock's, unchanged: one `RLOCK.ACQUIRE` per server,
 *   none waiting (the uncontended case costs what it did). Only when this Redlock's last wait
 *   for the same resource had to queue (told by message, or ran out) does it begin with a wait
 *   in the queue instead (a hot lock: its plain attempt would be refused, and would hold the
 *   other servers a moment from the queue's first); a grant there in the reply ends that.
 * - An attempt the queue server refused because another owner holds it there fails, whatever
 *   the others granted (given back at once): a holder that releases and asks again at once
 *   finds the queue's first waiter granted there, and goes behind it instead of taking the
 *   other servers from it. Refusing more than Redlock would never makes two holders.
 * - After such a refusal, or a failed attempt the queue server granted (another contender,
 *   refused there, held the others a moment), the pause is a wait (`WAIT ms NOTIFY`) in the
 *   queue server's queue, for the next attempt's owner. A grant there starts the next attempt at once: a Redlock
 *   round that confirms the queue server's grant (`RLOCK.RENEW ... PX duration`, the RENEW
 *   every grant told by message owes) and asks every other server with a short wait of its
 *   own. Its validity counts from the round's start as any round's does (every lease it
 *   counts, the queue server's too, was set at or after that start), so a majority within it
 *   holds the lock exactly as Redlock's rules say; a round without one is given back
 *   everywhere and waits again.
 * - Why this cannot split the servers between contenders (bench/redlock-queues.ts): only one
 *   queue orders the contenders, and only its holder waits on the other servers, so nobody
 *   waits on one server while holding another that someone waits for (every wait is bounded
 *   too). What makes a holder of the other servers leave them is its own refusal by the queue
 *   server, a round that runs out, or its release.
 * - A wait lasts one pause (retryDelay +- retryJitter), so `retryCount` counts attempts as
 *   redlock's (a wait that runs out leaves the queue, `RLOCK.CANCEL`, and the next attempt
 *   queues again at its end); with `retryCount` -1 it lasts up to the duration.
 * - The price: a client that dies granted on the queue server (by message, before its round
 *   ends) keeps the others from the lock until that grant's lease ends (one duration), where
 *   Redlock would let them take the other servers: what a holder that dies costs either way.
 * - Only one resource is queued: an acquire of several keeps Redlock's plain retries. The
 *   queue server down, slow or failing: plain retries too (safety never rests on the queue).
 */

import { acquire, acquireTail } from './acquire';
import { Arg } from './drivers/driver';
import { targetOf } from './dispatcher';
import { ResourceLockedError, WrongTypeError, publicError } from './errors';
import { ExecutionStats, Round, quorumRound } from './quorum';
import { requestId } from './request';
import { Session } from './session';

/** The queue server's grant of the next attempt's owner, told by message or in the reply. */
export interface Queued {
  readonly call: QueueCall;
  readonly owner: string;
  readonly token: number;
}

/** What the queue and its round need of one `acquire`. */
export interface QueueCall {
  readonly clients: readonly unknown[];
  readonly resources: string[];
  readonly duration: number;
  /** One server's response timeout. */
  readonly timeout: number;
  /** The user's `error` listeners: what a server failed with. */
  readonly report: (err: unknown) => void;
}

/** A vote against as Redlock's: the resource is another owner's (or a key of another type). */
function refusal(cause?: unknown): ResourceLockedError {
  return new ResourceLockedError('The operation was applied to: 0 of the 1 requested resources.', { cause });
}

/** The attempt whose stats these are was refused by the queue server because another owner holds it there (one resource only). */
export function refusedByQueue(clients: readonly unknown[], resources: string[], stats: ExecutionStats): boolean {
  return resources.length === 1 && stats.votesAgainst.get(clients[0]) instanceof ResourceLockedError;
}

/**
 * After a failed attempt: whether the pause is spent in the queue server's queue, because the
 * queue server refused it as held, or granted it while the others refused it (held a moment
 * longer by a contender it refused). Not when the queue server failed, nor when it granted and
 * another server failed or holds a key of another type (a queue it grants at once would leave
 * no pause between attempts), nor for several resources.
 */
export function queueAfter(clients: readonly unknown[], resources: string[], stats: ExecutionStats): boolean {
  if (resources.length !== 1 || !stats.votesFor.has(clients[0])) return refusedByQueue(clients, resources, stats);
  // A refusal with a cause is a key of another type: asked again at once, it refuses again.
  for (const err of stats.votesAgainst.values()) if (!(err instanceof ResourceLockedError) || err.cause !== undefined) return false;
  return true;
}

/**
 * Per Redlock (its `clients`), the resource whose last wait in the queue server's queue was
 * told its grant by message, or ran out: contended, so its next acquire waits there first
 * instead of asking every server (and holding the others a moment from the queue's first).
 */
const contendedOf = new WeakMap<readonly unknown[], string>();

/** The last wait for this one resource queued: the acquire begins with a wait in the queue. */
export function contended(clients: readonly unknown[], resources: string[]): boolean {
  return resources.length === 1 && contendedOf.get(clients) === resources[0];
}

/**
 * `RLOCK.ACQUIRE resource owner PX duration [WAIT ms NOTIFY id] ID id` on `client`, waiting up
 * to `waitMs`: its token and whether it was told by message, or null.
 */
async function acquireWaiting(
  call: QueueCall,
  client: unknown,
  owner: string,
  waitMs: number,
): Promise<{ token: number; told: boolean } | null> {
  const resource = call.resources[0];
  const release: Arg[] = ['RLOCK.RELEASE', resource, owner];
  const session = Session.of(client, resource);
  const granted = await acquire(session, {
    args: (id, wait) => acquireTail(['RLOCK.ACQUIRE', resource, owner], { lease: call.duration, watchdog: false, id, wait }),
    targets: [targetOf('lock', resource, owner)],
    waitMs,
    cancel: ['RLOCK.CANCEL', resource, owner],
    release,
    timeout: call.timeout,
    confirm: null,
  });
  if (!granted) return null;
  // A grant told by message (or a retried call's) counts once RENEW confirms it (C4.2); the
  // queue server's is confirmed by its round's RENEW.
  if (granted.confirm && client !== call.clients[0] && !(await renewed(call, client, owner))) return null;
  return { token: granted.tokens[0], told: granted.confirm };
}

async function renewed(call: QueueCall, client: unknown, owner: string): Promise<boolean> {
  const resource = call.resources[0];
  const called = await Session.of(client, resource).callEx(['RLOCK.RENEW', resource, owner, 'PX', call.duration], call.timeout);
  return Number(called.reply) === 1;
}

/**
 * The pause after an attempt the queue server answered (or the start of a contended acquire):
 * a wait of up to `waitMs` in its queue for `owner` (the next attempt's). The grant, or null
 * when the wait ended without one (it left the queue) or the queue server failed (then the
 * rest of one pause, `pauseMs`, is slept, as between two attempts).
 */
export async function waitInQueue(call: QueueCall, owner: string, waitMs: number, pauseMs: number): Promise<Queued | null> {
  const until = Date.now() + pauseMs;
  try {
    const granted = await acquireWaiting(call, call.clients[0], owner, waitMs);
    if (!granted || granted.told) contendedOf.set(call.clients, call.resources[0]);
    else contendedOf.delete(call.clients);
    return granted && { call, owner, token: granted.token };
  } catch (err) {
    contendedOf.delete(call.clients);
    call.report(err);
    const left = until - Date.now();
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
    return null;
  }
}

/**
 * The attempt after a grant by the queue server: its RENEW there, and on every other server an
 * acquire that waits a little (a contender refused by the queue server may hold it for a
 * moment before it gives it back). Its ballots are bounded as any round's: each call by the
 * response timeout, each wait by a fraction of the duration.
 */
export function queuedRound(queued: Queued): Promise<Round<number[]>> {
  const call = queued.call;
  const waitMs = Math.max(1, Math.min(call.timeout, Math.floor(call.duration / 4)));
  return quorumRound(call.clients, async (client, index) => {
    try {
      const token =
        index === 0
          ? (await renewed(call, client, queued.owner))
            ? queued.token
            : null
          : ((await acquireWaiting(call, client, queued.owner, waitMs))?.token ?? null);
      if (token === null) throw refusal();
      return [token];
    } catch (err) {
      if (err instanceof ResourceLockedError) throw err;
      call.report(err);
      // No answer: the server may hold it for us, and a failed round gives back only what it counted.
      const resource = call.resources[0];
      await Session.of(client, resource)
        .call(['RLOCK.RELEASE', resource, queued.owner, 'ID', requestId()], call.timeout)
        .catch(() => {});
      throw publicError(err) instanceof WrongTypeError ? refusal(err) : err;
    }
  });
}
