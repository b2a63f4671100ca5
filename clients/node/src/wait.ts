/**
 * Wait by message (NOTIFY): a waiting call names the Session's subscriber
 * (`WAIT ms NOTIFY <its client id>`), the server queues it and answers `WAITING`, and the
 * Dispatcher hands over the message that ends the wait. No connection is blocked, none is
 * held per wait. A wait given up (its deadline, its signal) leaves the queue with
 * `RLOCK.CANCEL`; a grant that raced it is given back.
 */

import { Confirm, Unconfirmed } from './confirm';
import { Arg } from './drivers/driver';
import { ConnectionError, ConnectionFailure, ServerReply } from './errors';
import { Dispatcher, Outcome, Waiter, splitTarget } from './dispatcher';
import { RECONNECT_PAUSE_MS, isRedirect, sleep } from './request';
import type { Called, Session, Subscriber } from './session';

export interface WaitSpec {
  target: string;
  /**
   * The targets of the other keys of an all-or-none wait (`RLOCK.ACQUIREALL`), told by one
   * message each, in the same turn as `target`'s: granted only when every one is.
   */
  more?: string[];
  /** The full command for the subscriber `clientId`, with `WAIT waitMs NOTIFY clientId`. */
  build(clientId: number, waitMs: number): Arg[];
  /** Undefined: no time limit. */
  waitMs: number | undefined;
  signal?: AbortSignal;
  /** `RLOCK.CANCEL key owner`, or null where it cannot reach the wait (latch). */
  cancel: Arg[] | null;
  release: Arg[] | null;
  timeout: number;
  /** Confirmation of a grant in the call's own reply (pipelined WAIT). */
  confirm?: Confirm | null;
}

export interface Waited {
  token: number;
  /** With `WaitSpec.more`: the token of each target, `target`'s first. */
  tokens: number[];
  /** Granted by message after queueing (a watchdog grant is then bound to the subscriber). */
  queued: boolean;
  retried: boolean;
  /** Granted in the call's reply, and acknowledged by too few replicas. */
  unconfirmed?: Unconfirmed;
  /** Where it was granted: another Cluster primary's Session when its slot moved meanwhile. */
  session: Session;
}

/**
 * A wait's first attempt, sent by its caller already (`Holder`'s quick acquire), its waiters
 * registered for `sub` before it went out; the rest of the wait goes on from its call.
 */
export interface FirstAttempt {
  sub: Subscriber;
  waiters: Waiter[];
  called: Promise<Called>;
}

/** The outcomes of an all-or-none wait's keys: the first that is not a grant, else a grant once all are. */
function allGranted(outcomes: Promise<Outcome>[]): Promise<Outcome> {
  return new Promise((resolve) => {
    let left = outcomes.length;
    for (const outcome of outcomes) {
      void outcome.then((told) => {
        if (told.kind !== 'granted' || --left === 0) resolve(told);
      });
    }
  });
}

/** Takes `waiters` out of `dispatcher` (a function, not a closure made for every wait). */
function dropAll(dispatcher: Dispatcher, waiters: Waiter[]): void {
  for (const one of waiters) dispatcher.remove(one);
}

/**
 * A waiting call: the token (1 for a latch) or null when its wait ran out. The waiter is
 * registered before the call goes out (its message may overtake the reply).
 */
export async function waitByMessage(session: Session, spec: WaitSpec, first?: FirstAttempt): Promise<Waited | null> {
  const deadline = spec.waitMs === undefined ? Infinity : Date.now() + spec.waitMs;
  let attempts = 0;
  let redirects = 0;
  let retried = false;
  let asking = false;
  for (;;) {
    const dispatcher = session.dispatcher;
    let sub: Subscriber;
    let waiters: Waiter[];
    let calling: Promise<Called>;
    if (first) {
      ({ sub, waiters, called: calling } = first);
      first = undefined;
    } else {
      spec.signal?.throwIfAborted();
      sub = session.subscribed ?? (await session.subscriber());
      const waitMs = deadline === Infinity ? 0 : Math.max(1, deadline - Date.now());
      waiters = [dispatcher.add(spec.target, sub.generation, deadline, spec.release)];
      if (spec.more) for (const target of spec.more) waiters.push(dispatcher.add(target, sub.generation, deadline, spec.release));
      // Not followed by the call itself: it names this Session's subscriber.
      calling = session.callEx(spec.build(sub.clientId, waitMs), spec.timeout, true, spec.confirm ?? null, { asking, follow: false });
    }
    let called: Called;
    try {
      called = await calling;
    } catch (err) {
      dropAll(dispatcher, waiters);
      const elsewhere = err instanceof ServerReply && redirects < 50 ? await session.redirection(err.message) : null;
      if (elsewhere) {
        // Its slot moved (MOVED) or is moving (ASK): wait on that primary, told by its subscriber.
        redirects++;
        ({ session, asking } = elsewhere);
        continue;
      }
      // The subscriber dropped between our look at it, or is on another node than the command
      // connection (a failover under way): both connect again, and the wait is sent again.
      if (err instanceof ServerReply && /not subscribed/.test(err.message) && redirects++ < 50) {
        session.redirect({ ...session.answeredOn(err), subscriber: sub.generation });
        await sleep(RECONNECT_PAUSE_MS);
        continue;
      }
      throw err;
    }
    asking = false;
    retried ||= called.retried;
    const reply = called.reply;
    if (typeof reply === 'number' || Array.isArray(reply)) {
      dropAll(dispatcher, waiters);
      const tokens = Array.isArray(reply) ? reply.map(Number) : [reply];
      return { token: tokens[0], tokens, queued: false, retried, unconfirmed: called.unconfirmed, session };
    }
    if (reply === null || reply === undefined) {
      dropAll(dispatcher, waiters);
      return null;
    }
    if (reply !== 'WAITING') {
      dropAll(dispatcher, waiters);
      throw new ServerReply(`ERR unexpected reply to ${String(spec.build(0, 0)[0])}: ${String(reply)}`);
    }
    const outcome = waiters.length === 1 ? Dispatcher.outcome(waiters[0]) : allGranted(waiters.map(Dispatcher.outcome));
    const result = await settled(session, waiters, outcome, deadline + spec.timeout, spec.signal);
    // The other keys' messages of an all-or-none wait that ended: nobody waits for them.
    if (result.kind !== 'granted' && result.kind !== 'deadline' && result.kind !== 'abort') dropAll(dispatcher, waiters);
    switch (result.kind) {
      case 'granted': {
        const tokens = waiters.map((one) => Number((one.told as { value: string }).value));
        return { token: tokens[0], tokens, queued: true, retried, session };
      }
      case 'timeout':
        return null;
      case 'failed':
        if (/^(ASK|MOVED)$/.test(result.value) && redirects++ < 50) {
          // Its key left with its slot (MIGRATE): sent again here, it is answered where it went.
          continue;
        }
        if (isRedirect(result.value) && redirects++ < 50) {
          // The primary turned replica: wait again (the same id) in the new primary's queue.
          session.redirect({ command: called.generation, subscriber: sub.generation });
          continue;
        }
        throw new ServerReply(`${result.value} the wait failed when its turn came`);
      case 'closed':
        throw new ConnectionError('rlock: the client was closed');
      case 'disconnected':
      case 'resend':
        // Sent again with its id: it takes over its entry, or answers as the first did.
        if (attempts++ < 5) continue;
        throw new ConnectionFailure('the subscriber connection kept dropping while waiting');
      case 'deadline':
        await giveUp(session, waiters, spec);
        return null;
      case 'abort':
        await giveUp(session, waiters, spec);
        throw spec.signal!.reason;
    }
  }
}

/**
 * The message for `waiters` (one, or one per key of an all-or-none wait), or its local
 * deadline, or the abort of `signal`, whichever first.
 */
function settled(session: Session, waiters: Waiter[], outcome: Promise<Outcome>, deadline: number, signal?: AbortSignal): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    let timer: NodeJS.Timeout | null = null;
    const onAbort = () => finish({ kind: 'abort' });
    const finish = (result: Outcome) => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      // Messages dispatched before the abort or deadline win: their grant is ours.
      if (waiters.every((waiter) => waiter.told)) result = waiters.find((w) => w.told!.kind !== 'granted')?.told ?? waiters[0].told!;
      if (result.kind === 'abort' || result.kind === 'deadline') {
        for (const waiter of waiters) {
          if (waiter.told?.kind === 'granted') {
            // Part of an all-or-none grant whose other messages did not come in time.
            session.dispatcher.giveBack(...splitTarget(waiter.target), waiter);
          } else if (!waiter.told) {
            // Still queued as far as we know: it stays, to absorb its message.
            waiter.ghost = true;
            waiter.settle = () => {};
          }
        }
      }
      resolve(result);
    };
    outcome.then(finish);
    if (Number.isFinite(deadline)) {
      timer = setTimeout(() => finish({ kind: 'deadline' }), Math.max(0, deadline - Date.now()));
    }
    if (signal) {
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
}

/** Leaves the queue (`RLOCK.CANCEL`); a grant that raced it is given back when it comes. */
async function giveUp(session: Session, waiters: Waiter[], spec: WaitSpec): Promise<void> {
  if (!spec.cancel) return;
  const dispatcher = session.dispatcher;
  try {
    const removed = Number(await session.call(spec.cancel, spec.timeout));
    if (removed > 0) {
      // One cancel takes an all-or-none request out of every queue.
      waiters.forEach((one) => dispatcher.remove(one));
      // RLOCK.CANCEL took out every entry of this owner at this key: the others go again.
      for (const other of dispatcher.live(spec.target)) {
        dispatcher.remove(other);
        other.settle({ kind: 'resend' });
      }
    }
  } catch {
    // the ghost absorbs the message when it comes
  }
}
