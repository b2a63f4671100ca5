/**
 * Redlock (the algorithm of the Redis documentation) over N independent servers with the
 * rlock module, in the shape of the `redlock` package (v5): `acquire(resources, duration)`,
 * `release(lock)`, `extend(lock, duration)`, `using(resources, duration, async (signal) => ...)`.
 *
 * Each attempt sends `RLOCK.ACQUIRE resource owner PX duration ID id` for every resource to
 * every server at once (one owner and one request id per attempt; a retried call never counts
 * twice); the lock is held when a majority of the servers granted every resource within the
 * validity time (duration - elapsed - drift). Otherwise it is released everywhere and tried
 * again after `retryDelay` +- `retryJitter` ms, `retryCount` times.
 *
 * Served in order (redlockqueue.ts): for one resource, an attempt the first server refused as
 * held fails whatever the others granted, and the pause after it is a wait in that server's
 * FIFO queue; its grant starts the next attempt, a round that counts its validity as any
 * round does. Only refusals are added and only one queue orders the contenders, so Redlock's
 * safety is unchanged and no wait can split the servers (bench/redlock-queues.ts); with the
 * first server down or slow, attempts retry as above.
 *
 * What Redlock does not guarantee: it keeps one holder only while its timing assumptions hold
 * (bounded pauses and delays, clocks never stepped); a GC pause or clock jump can let two
 * clients believe they hold it, and there is no fencing across servers: `lock.tokens[i]` are
 * server i's fencing tokens, each comparable only with that server's later tokens.
 */

import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { Arg } from './drivers/driver';
import { Deadlines } from './deadlines';
import { ConnectionError, ExecutionError, ResourceLockedError, WrongTypeError, publicError } from './errors';
import { ExecutionResult, ExecutionStats, Vote, countVotes, quorumRound, quorumSize } from './quorum';
import { QueueCall, Queued, contended, queueAfter, queuedRound, refusedByQueue, waitInQueue } from './redlockqueue';
import { requestId } from './request';
import { Session, replyOf } from './session';

export interface RedlockSettings {
  /** Clock drift allowed, as a fraction of the duration (0.01). */
  readonly driftFactor: number;
  /** Attempts after the first (10); -1: no limit. */
  readonly retryCount: number;
  /** ms between attempts (200). */
  readonly retryDelay: number;
  /** Up to this many ms more or less (100). */
  readonly retryJitter: number;
  /** `using` extends the lock this many ms before it would expire (500). */
  readonly automaticExtensionThreshold: number;
  /** How long one server may take to answer, ms (default: a fifth of the duration, 50 to 2000). */
  readonly responseTimeout?: number;
}

const DEFAULTS: RedlockSettings = {
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500,
};

/** No overrides: the instance's settings themselves, not a copy made per call. */
const NO_OVERRIDES: Partial<RedlockSettings> = Object.freeze({});

/**
 * The bound on each server's vote (twice its response timeout), one timer for them all,
 * armed for the earliest and re-armed only when it fires: a `setTimeout` and `clearTimeout`
 * per server and attempt were three timers an uncontended pair over three servers.
 */
const voteBounds = new Deadlines(() => {});

/** An `AbortSignal` that also carries the error that aborted it (as redlock's does). */
export type RedlockAbortSignal = AbortSignal & { error?: Error };

export class RedlockLock {
  constructor(
    readonly redlock: Redlock,
    readonly resources: string[],
    /** The owner id the lock is held under on every server. */
    readonly value: string,
    /**
     * Per server (in the order given): the fencing token of each resource, undefined where not
     * granted. Filled in by a server that answers after the majority did (`tokens`).
     */
    readonly grants: ReadonlyArray<number[] | null | undefined>,
    /** ms since the epoch until which the lock is held (its validity). */
    public expiration: number,
    /** As redlock's: the stats of each attempt it took. */
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>,
  ) {}

  /**
   * Per server (in the order given): the fencing token of each resource, or null where not
   * granted, or not yet: the lock is held once a majority granted, and a server that answers
   * later has its tokens here from then on (`await Promise.all(lock.attempts)` waits for every
   * server's answer).
   */
  get tokens(): Array<number[] | null> {
    return this.grants.map((tokens) => tokens ?? null);
  }

  release(): Promise<ExecutionResult> {
    return this.redlock.release(this);
  }

  extend(duration: number): Promise<RedlockLock> {
    return this.redlock.extend(this, duration);
  }
}

/** Kept for callers of rlock's earlier Redlock; redlock's own name is `ExecutionResult`. */
export type RedlockResult = ExecutionResult;

/** Until when a lock granted with a lease of `duration` ms from `start` is held, less the clock drift. */
export function validUntil(start: number, duration: number, driftFactor: number): number {
  return start + duration - Math.round(duration * driftFactor) - 2;
}

/** One pause between attempts: `retryDelay` +- `retryJitter` ms. */
function pauseMs(settings: RedlockSettings): number {
  return Math.max(0, settings.retryDelay + Math.floor((Math.random() * 2 - 1) * settings.retryJitter));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** redlock's check and message, for every duration it takes. */
function checkDuration(duration: number): void {
  if (Math.floor(duration) !== duration) throw new Error('Duration must be an integer value in milliseconds.');
  if (!(duration >= 1)) throw new RangeError('rlock: duration must be at least 1 ms');
}

/** A server's refusal, worded as redlock's: on a refusal nothing stays applied on that server. */
function locked(requested: number, cause?: unknown): ResourceLockedError {
  return new ResourceLockedError(`The operation was applied to: 0 of the ${requested} requested resources.`, { cause });
}

/** `call()`, its throw a rejection as from an `async` frame, without the frame's promises. */
function rejecting<T>(call: () => Promise<T>): Promise<T> {
  try {
    return call();
  } catch (err) {
    return Promise.reject(err);
  }
}

/** True when an error reply means the resource is taken (by another owner, or by a key of another type). */
function takenBy(reply: unknown): boolean {
  return reply === null || publicError(reply) instanceof WrongTypeError;
}

export class Redlock extends EventEmitter {
  readonly clients: unknown[];
  readonly settings: RedlockSettings;

  constructor(clients: Iterable<unknown>, settings: Partial<RedlockSettings> = {}) {
    super();
    this.clients = [...new Set(clients)];
    if (!this.clients.length) throw new TypeError('rlock: Redlock needs at least one client');
    for (const client of this.clients) Session.of(client);
    this.settings = { ...DEFAULTS, ...settings };
  }

  get quorum(): number {
    return quorumSize(this.clients.length);
  }

  private report(err: unknown): void {
    if (this.listenerCount('error') > 0) this.emit('error', publicError(err));
  }

  private timeoutFor(duration: number, settings: RedlockSettings): number {
    return settings.responseTimeout ?? Math.min(2000, Math.max(50, Math.floor(duration / 5)));
  }

  /**
   * One command per resource on one server, at once; `then` reads the replies (each reply, or
   * the error, reported). For one resource, the call's own `then` does it: no `Promise.all`, no
   * second `then`, no `async` frame of the caller awaiting it.
   */
  private eachResource<T>(
    client: unknown,
    resources: string[],
    command: (resource: string) => Arg[],
    timeout: number,
    then: (replies: unknown[]) => T | Promise<T>,
  ): Promise<T> {
    const failed = (err: unknown) => {
      this.report(err);
      return err;
    };
    if (resources.length === 1) {
      return Session.of(client, resources[0]).callThen(
        command(resources[0]),
        timeout,
        (reply) => then([reply]),
        (err) => then([failed(err)]),
      );
    }
    return Promise.all(
      resources.map((resource) => Session.of(client, resource).callEx(command(resource), timeout).then(replyOf, failed)),
    ).then(then);
  }

  /**
   * Every resource on one server: the vote for, with its tokens; else what was granted is given
   * back and the vote is against (a `ResourceLockedError` when another owner holds one). A vote
   * that takes longer than two response timeouts (a server that does not even accept the
   * connection) is against; a grant that comes later is given back. The vote is cast from the
   * reply's own `then`: no promise of its own.
   */
  private voteToAcquire(
    client: unknown,
    resources: string[],
    owner: string,
    duration: number,
    timeout: number,
    vote: Vote<number[]>,
  ): void {
    let late = false;
    const bound = voteBounds.start('RLOCK.ACQUIRE', timeout * 2, () => {
      late = true;
      vote.against(new ConnectionError(`rlock: no answer from the server within ${timeout * 2} ms`));
    });
    const against = (err: unknown) => {
      voteBounds.end(bound);
      vote.against(err);
    };
    const replied = (replies: unknown[]) => {
      if (!replies.every((reply) => typeof reply === 'number')) {
        this.refused(client, resources, owner, timeout, replies).catch(against);
        return;
      }
      voteBounds.end(bound);
      if (!late) vote.for(replies as number[]);
      else this.releaseOn(client, resources, owner, timeout).catch(() => {});
    };
    const id = requestId();
    try {
      void this.eachResource(
        client,
        resources,
        (resource) => ['RLOCK.ACQUIRE', resource, owner, 'PX', duration, 'ID', id],
        timeout,
        replied,
      );
    } catch (err) {
      against(err);
    }
  }

  /** Not every resource was granted on one server: what was, and what may have been, is given back; the vote is against. */
  private async refused(client: unknown, resources: string[], owner: string, timeout: number, replies: unknown[]): Promise<never> {
    // What was granted, and what may have been (no answer), is given back.
    await this.releaseOn(
      client,
      resources.filter((_, i) => replies[i] !== null),
      owner,
      timeout,
    ).catch(() => {});
    const failure = replies.find((reply) => reply instanceof Error && !takenBy(reply));
    if (failure) throw failure;
    throw locked(
      resources.length,
      replies.find((reply) => reply instanceof Error),
    );
  }

  /** Releases every resource on one server; a vote against unless each was still held. */
  private releaseOn(client: unknown, resources: string[], owner: string, timeout: number): Promise<void> {
    if (!resources.length) return Promise.resolve();
    return rejecting(() =>
      this.eachResource(
        client,
        resources,
        (resource) => ['RLOCK.RELEASE', resource, owner, 'ID', requestId()],
        timeout,
        (replies) => this.settle(replies, (reply) => typeof reply === 'number', resources.length),
      ),
    );
  }

  private renewOn(client: unknown, resources: string[], owner: string, duration: number, timeout: number): Promise<void> {
    return rejecting(() =>
      this.eachResource(
        client,
        resources,
        (resource) => ['RLOCK.RENEW', resource, owner, 'PX', duration],
        timeout,
        (replies) => this.settle(replies, (reply) => Number(reply) === 1, resources.length),
      ),
    );
  }

  /** A server's vote on release or renew: throws its first failure, or redlock's refusal. */
  private settle(replies: unknown[], done: (reply: unknown) => boolean, requested: number): void {
    if (replies.every(done)) return;
    const failure = replies.find((reply) => reply instanceof Error && !takenBy(reply));
    if (failure) throw failure;
    throw locked(requested);
  }

  private validity(start: number, duration: number, settings: RedlockSettings): number {
    return validUntil(start, duration, settings.driftFactor);
  }

  private maxAttempts(settings: RedlockSettings): number {
    return settings.retryCount === -1 ? Infinity : settings.retryCount + 1;
  }

  private retryPause(settings: RedlockSettings): Promise<void> {
    return sleep(pauseMs(settings));
  }

  /** A wait in the first server's queue for the next attempt (redlockqueue.ts); retryCount -1: up to the duration. */
  private queue(resources: string[], duration: number, timeout: number, settings: RedlockSettings): Promise<Queued | null> {
    const call: QueueCall = { clients: this.clients, resources, duration, timeout, report: (err) => this.report(err) };
    const pause = pauseMs(settings);
    return waitInQueue(call, `${randomUUID()}:redlock`, settings.retryCount === -1 ? Math.max(pause, duration) : pause, pause);
  }

  private settingsWith(overrides: Partial<RedlockSettings>): RedlockSettings {
    return overrides === NO_OVERRIDES ? this.settings : { ...this.settings, ...overrides };
  }

  /**
   * Held once a majority granted within the validity (the round does not wait for the slower
   * servers: their grants are recorded, and given back with the lock, as they come); else what
   * was granted is given back once every server answered, and it is tried again.
   */
  async acquire(resources: string[], duration: number, overrides: Partial<RedlockSettings> = NO_OVERRIDES): Promise<RedlockLock> {
    const settings = this.settingsWith(overrides);
    if (!Array.isArray(resources) || !resources.length) throw new TypeError('rlock: resources must be a non-empty array');
    checkDuration(duration);
    const timeout = this.timeoutFor(duration, settings);
    const attempts: Array<Promise<ExecutionStats>> = [];
    // The queue server's grant for the next attempt (redlockqueue.ts): contenders in order.
    let queued =
      settings.retryCount !== 0 && contended(this.clients, resources) ? await this.queue(resources, duration, timeout, settings) : null;
    for (;;) {
      const owner = queued?.owner ?? `${randomUUID()}:redlock`;
      const start = Date.now();
      const round = queued
        ? await queuedRound(queued)
        : await countVotes<number[]>(
            this.clients,
            (client, _index, vote) => this.voteToAcquire(client, resources, owner, duration, timeout, vote),
            true,
            // The queue server's refusal vetoes a majority (redlockqueue.ts): its vote is awaited.
            resources.length === 1 ? 0 : -1,
          );
      attempts.push(round.settled);
      const expiration = this.validity(start, duration, settings);
      if (round.granted && expiration > Date.now() && !refusedByQueue(this.clients, resources, round.stats)) {
        return new RedlockLock(this, resources, owner, round.results, expiration, attempts);
      }
      // Every answer, so that each grant is given back (a round not granted has them all).
      await round.settled;
      await Promise.all(
        this.clients.map((client, i) => (round.results[i] ? this.releaseOn(client, resources, owner, timeout).catch(() => {}) : null)),
      );
      if (attempts.length >= this.maxAttempts(settings)) {
        throw new ExecutionError(
          `Redlock: the lock on ${resources.join(', ')} could not be acquired: ${round.stats.votesFor.size} of ${this.clients.length} servers granted it, ${this.quorum} needed`,
          attempts,
        );
      }
      if (queueAfter(this.clients, resources, round.stats)) queued = await this.queue(resources, duration, timeout, settings);
      else {
        queued = null;
        await this.retryPause(settings);
      }
    }
  }

  /**
   * `operation` on every server until a majority agrees, as redlock's: retried (up to
   * `retryCount`) only while some server failed to answer, since a refusal by the holder's
   * server does not change by asking again.
   */
  private async execute(
    what: () => string,
    settings: RedlockSettings,
    operation: (client: unknown) => Promise<void>,
  ): Promise<ExecutionResult> {
    const attempts: Array<Promise<ExecutionStats>> = [];
    for (;;) {
      // Decided once a majority agreed; a round that is not granted has every vote.
      const round = await quorumRound(this.clients, operation, true);
      attempts.push(round.settled);
      if (round.granted) return { attempts };
      const retryable = [...round.stats.votesAgainst.values()].some((err) => !(err instanceof ResourceLockedError));
      if (!retryable || attempts.length >= this.maxAttempts(settings)) {
        throw new ExecutionError(
          `Redlock: ${what()}: ${round.stats.votesFor.size} of ${this.clients.length} servers agreed, ${this.quorum} needed`,
          attempts,
        );
      }
      await this.retryPause(settings);
    }
  }

  /** Releases on every server; rejects with `ExecutionError` when fewer than a quorum still held it. */
  async release(lock: RedlockLock, overrides: Partial<RedlockSettings> = NO_OVERRIDES): Promise<ExecutionResult> {
    const settings = this.settingsWith(overrides);
    const timeout = this.timeoutFor(Math.max(1, lock.expiration - Date.now()), settings);
    lock.expiration = 0;
    return this.execute(
      () => `the lock on ${lock.resources.join(', ')} could not be released`,
      settings,
      (client) => this.releaseOn(client, lock.resources, lock.value, timeout),
    );
  }

  /** Sets every server's lease to `duration` again; a new lock with the new expiration. */
  async extend(lock: RedlockLock, duration: number, overrides: Partial<RedlockSettings> = NO_OVERRIDES): Promise<RedlockLock> {
    const settings = this.settingsWith(overrides);
    checkDuration(duration);
    if (lock.expiration < Date.now()) {
      throw new ExecutionError('Cannot extend an already-expired lock.', []);
    }
    const timeout = this.timeoutFor(duration, settings);
    const start = Date.now();
    const { attempts } = await this.execute(
      () => `the lock on ${lock.resources.join(', ')} could not be extended`,
      settings,
      (client) => this.renewOn(client, lock.resources, lock.value, duration, timeout),
    );
    lock.expiration = 0;
    return new RedlockLock(this, lock.resources, lock.value, lock.grants, this.validity(start, duration, settings), attempts);
  }

  /**
   * Acquires, runs `routine` with a signal that aborts when an automatic extension fails
   * (`signal.error` says why), extends the lock while it runs, and releases it.
   */
  using<T>(resources: string[], duration: number, routine: (signal: RedlockAbortSignal) => Promise<T>): Promise<T>;
  using<T>(
    resources: string[],
    duration: number,
    settings: Partial<RedlockSettings>,
    routine: (signal: RedlockAbortSignal) => Promise<T>,
  ): Promise<T>;
  async using<T>(
    resources: string[],
    duration: number,
    settingsOrRoutine: Partial<RedlockSettings> | ((signal: RedlockAbortSignal) => Promise<T>),
    maybeRoutine?: (signal: RedlockAbortSignal) => Promise<T>,
  ): Promise<T> {
    const overrides = typeof settingsOrRoutine === 'function' ? {} : settingsOrRoutine;
    const routine = typeof settingsOrRoutine === 'function' ? settingsOrRoutine : maybeRoutine!;
    const settings = { ...this.settings, ...overrides };
    checkDuration(duration);
    if (settings.automaticExtensionThreshold > duration - 100) {
      throw new Error('A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting.');
    }
    let lock = await this.acquire(resources, duration, settings);
    const controller = new AbortController();
    const signal = controller.signal as RedlockAbortSignal;
    let timer: NodeJS.Timeout | null = null;
    let extending: Promise<void> | null = null;
    let done = false;
    // A failed extension is tried again while the lock is still valid, as redlock does.
    const extend = (): Promise<void> =>
      this.extend(lock, duration, settings).then(
        (extended) => {
          lock = extended;
          if (!done) schedule();
        },
        (err): Promise<void> | undefined => {
          if (!done && lock.expiration > Date.now()) return sleep(settings.retryDelay).then(extend);
          signal.error = err;
          controller.abort(err);
          return undefined;
        },
      );
    const schedule = () => {
      const wait = lock.expiration - Date.now() - settings.automaticExtensionThreshold;
      timer = setTimeout(() => (extending = extend()), Math.max(0, wait));
    };
    schedule();
    try {
      return await routine(signal);
    } finally {
      done = true;
      if (timer) clearTimeout(timer);
      if (extending) await extending;
      try {
        // Released on every server that answers before `using` returns (the round itself is
        // decided by the majority).
        await Promise.all((await this.release(lock, settings)).attempts);
      } catch (err) {
        if (!signal.aborted) throw err;
      }
    }
  }

  /** Closes the connections rlock opened to the servers (not the clients themselves). */
  async quit(): Promise<void> {
    for (const client of this.clients) Session.close(client);
  }
}
