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
 * What Redlock does not guarantee: it keeps one holder only while its timing assumptions hold
 * (bounded pauses and delays, clocks never stepped); a GC pause or clock jump can let two
 * clients believe they hold it, and there is no fencing across servers: `lock.tokens[i]` are
 * server i's fencing tokens, each comparable only with that server's later tokens.
 */

import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { ExecutionError, publicError } from './errors';
import { requestId } from './request';
import { Session } from './session';

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

/** An `AbortSignal` that also carries the error that aborted it (as redlock's does). */
export type RedlockAbortSignal = AbortSignal & { error?: Error };

export class RedlockLock {
  constructor(
    readonly redlock: Redlock,
    readonly resources: string[],
    /** The owner id the lock is held under on every server. */
    readonly value: string,
    /** Per server (in the order given): the fencing token of each resource, or null where not granted. */
    readonly tokens: Array<number[] | null>,
    /** ms since the epoch until which the lock is held (its validity). */
    public expiration: number,
    readonly attempts: number,
  ) {}

  release(): Promise<RedlockResult> {
    return this.redlock.release(this);
  }

  extend(duration: number): Promise<RedlockLock> {
    return this.redlock.extend(this, duration);
  }
}

export interface RedlockResult {
  /** Servers that confirmed. */
  readonly votesFor: number;
  readonly quorum: number;
}

/** A majority of `servers`. */
export function quorumOf(servers: number): number {
  return Math.floor(servers / 2) + 1;
}

/** Until when a lock granted with a lease of `duration` ms from `start` is held, less the clock drift. */
export function validUntil(start: number, duration: number, driftFactor: number): number {
  return start + duration - Math.round(duration * driftFactor) - 2;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class Redlock extends EventEmitter {
  readonly clients: unknown[];
  readonly settings: RedlockSettings;

  constructor(clients: Iterable<unknown>, settings: Partial<RedlockSettings> = {}) {
    super();
    this.clients = [...clients];
    if (!this.clients.length) throw new TypeError('rlock: Redlock needs at least one client');
    for (const client of this.clients) Session.of(client);
    this.settings = { ...DEFAULTS, ...settings };
  }

  get quorum(): number {
    return quorumOf(this.clients.length);
  }

  private report(err: unknown): void {
    if (this.listenerCount('error') > 0) this.emit('error', publicError(err));
  }

  private timeoutFor(duration: number, settings: RedlockSettings): number {
    return settings.responseTimeout ?? Math.min(2000, Math.max(50, Math.floor(duration / 5)));
  }

  /** Every resource on one server: its tokens, or null (what it granted is given back). */
  private async acquireOn(client: unknown, resources: string[], owner: string, duration: number, timeout: number): Promise<number[] | null> {
    const id = requestId();
    try {
      Session.of(client);
    } catch (err) {
      this.report(err);
      return null;
    }
    const replies = await Promise.all(
      resources.map((resource) =>
        Session.of(client, resource).call(['RLOCK.ACQUIRE', resource, owner, 'PX', duration, 'ID', id], timeout).catch((err) => {
          this.report(err);
          return undefined;
        }),
      ),
    );
    if (replies.every((reply) => typeof reply === 'number')) return replies as number[];
    // What was granted, and what may have been (no answer), is given back.
    await this.releaseOn(client, resources.filter((_, i) => replies[i] !== null), owner, timeout);
    return null;
  }

  /**
   * `acquireOn`, counted as no vote when it takes longer than two response timeouts (a server
   * that does not even accept the connection); a grant that comes later is given back.
   */
  private boundedAcquireOn(client: unknown, resources: string[], owner: string, duration: number, timeout: number): Promise<number[] | null> {
    return new Promise((resolve) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        resolve(null);
      }, timeout * 2);
      this.acquireOn(client, resources, owner, duration, timeout).then((tokens) => {
        clearTimeout(timer);
        if (!late) resolve(tokens);
        else if (tokens) this.releaseOn(client, resources, owner, timeout).catch(() => {});
      }, () => resolve(null));
    });
  }

  /** Releases every resource on one server: true when each was still held. */
  private async releaseOn(client: unknown, resources: string[], owner: string, timeout: number): Promise<boolean> {
    if (!resources.length) return true;
    const replies = await Promise.all(
      resources.map((resource) =>
        Session.of(client, resource).call(['RLOCK.RELEASE', resource, owner, 'ID', requestId()], timeout).catch((err) => {
          this.report(err);
          return null;
        }),
      ),
    );
    return replies.every((reply) => typeof reply === 'number');
  }

  private async renewOn(client: unknown, resources: string[], owner: string, duration: number, timeout: number): Promise<boolean> {
    const replies = await Promise.all(
      resources.map((resource) =>
        Session.of(client, resource).call(['RLOCK.RENEW', resource, owner, 'PX', duration], timeout).catch((err) => {
          this.report(err);
          return 0;
        }),
      ),
    );
    return replies.every((reply) => Number(reply) === 1);
  }

  private validity(start: number, duration: number, settings: RedlockSettings): number {
    return validUntil(start, duration, settings.driftFactor);
  }

  async acquire(resources: string[], duration: number, overrides: Partial<RedlockSettings> = {}): Promise<RedlockLock> {
    const settings = { ...this.settings, ...overrides };
    if (!Array.isArray(resources) || !resources.length) throw new TypeError('rlock: resources must be a non-empty array');
    if (!(Math.floor(duration) >= 1)) throw new RangeError('rlock: duration must be at least 1 ms');
    duration = Math.floor(duration);
    const timeout = this.timeoutFor(duration, settings);
    const maxAttempts = settings.retryCount === -1 ? Infinity : settings.retryCount + 1;
    for (let attempt = 1; ; attempt++) {
      const owner = `${randomUUID()}:redlock`;
      const start = Date.now();
      const tokens = await Promise.all(
        this.clients.map((client) => this.boundedAcquireOn(client, resources, owner, duration, timeout)),
      );
      const votes = tokens.filter((t) => t !== null).length;
      const expiration = this.validity(start, duration, settings);
      if (votes >= this.quorum && expiration > Date.now()) {
        return new RedlockLock(this, resources, owner, tokens, expiration, attempt);
      }
      await Promise.all(this.clients.map((client, i) => (tokens[i] ? this.releaseOn(client, resources, owner, timeout) : null)));
      if (attempt >= maxAttempts) {
        throw new ExecutionError(
          `Redlock: the lock on ${resources.join(', ')} could not be acquired: ${votes} of ${this.clients.length} servers granted it, ${this.quorum} needed`,
          attempt,
        );
      }
      const jitter = Math.floor((Math.random() * 2 - 1) * settings.retryJitter);
      await sleep(Math.max(0, settings.retryDelay + jitter));
    }
  }

  /** Releases on every server; rejects with `ExecutionError` when fewer than a quorum still held it. */
  async release(lock: RedlockLock, overrides: Partial<RedlockSettings> = {}): Promise<RedlockResult> {
    const settings = { ...this.settings, ...overrides };
    const timeout = this.timeoutFor(Math.max(1, lock.expiration - Date.now()), settings);
    lock.expiration = 0;
    const released = await Promise.all(this.clients.map((client) => this.releaseOn(client, lock.resources, lock.value, timeout)));
    const votesFor = released.filter(Boolean).length;
    if (votesFor < this.quorum) {
      throw new ExecutionError(
        `Redlock: the lock on ${lock.resources.join(', ')} was held on only ${votesFor} of ${this.clients.length} servers when released`,
        1,
      );
    }
    return { votesFor, quorum: this.quorum };
  }

  /** Sets every server's lease to `duration` again; a new lock with the new expiration. */
  async extend(lock: RedlockLock, duration: number, overrides: Partial<RedlockSettings> = {}): Promise<RedlockLock> {
    const settings = { ...this.settings, ...overrides };
    duration = Math.floor(duration);
    if (lock.expiration < Date.now()) {
      throw new ExecutionError(`Redlock: the lock on ${lock.resources.join(', ')} has already expired`, 0);
    }
    const timeout = this.timeoutFor(duration, settings);
    const start = Date.now();
    const renewed = await Promise.all(this.clients.map((client) => this.renewOn(client, lock.resources, lock.value, duration, timeout)));
    const votes = renewed.filter(Boolean).length;
    const expiration = this.validity(start, duration, settings);
    if (votes >= this.quorum && expiration > Date.now()) {
      return new RedlockLock(this, lock.resources, lock.value, lock.tokens, expiration, 1);
    }
    throw new ExecutionError(
      `Redlock: the lock on ${lock.resources.join(', ')} could not be extended: ${votes} of ${this.clients.length} servers renewed it`,
      1,
    );
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
    let lock = await this.acquire(resources, duration, settings);
    const controller = new AbortController();
    const signal = controller.signal as RedlockAbortSignal;
    let timer: NodeJS.Timeout | null = null;
    let extending: Promise<void> | null = null;
    let done = false;
    const schedule = () => {
      const wait = lock.expiration - Date.now() - settings.automaticExtensionThreshold;
      timer = setTimeout(() => {
        extending = this.extend(lock, duration, settings).then(
          (extended) => {
            lock = extended;
            if (!done) schedule();
          },
          (err) => {
            signal.error = err;
            controller.abort(err);
          },
        );
      }, Math.max(0, wait));
    };
    schedule();
    try {
      return await routine(signal);
    } finally {
      done = true;
      if (timer) clearTimeout(timer);
      if (extending) await extending;
      try {
        await this.release(lock, settings);
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
