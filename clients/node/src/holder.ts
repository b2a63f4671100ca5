/**
 * What Mutex, Semaphore and the read and write sides of ReadWriteLock share: one owner id per
 * object, acquire (waiting with NOTIFY) and tryAcquire, release, the fencing token, the
 * watchdog or a refreshed lease, loss reports, and `using`.
 */

import { randomUUID } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { Arg } from './drivers/driver';
import {
  ConnectionError,
  ConnectionFailure,
  LockLostError,
  LockTimeoutError,
  NotOwnedError,
  ServerReply,
  publicError,
} from './errors';
import { DEFAULT_RESPONSE_TIMEOUT, Holding, Hub, requestId, targetOf } from './hub';

export interface LockOptions {
  /**
   * The lease in ms. Omitted: the server's watchdog holds the lock while this process's
   * connection lives (`PX 30000 WATCHDOG`), and ends it within ms of the process dying.
   * Given: a plain lease of that length, renewed every `refreshInterval` ms.
   */
  lockTimeout?: number;
  /** How long `acquire()` waits in the server's FIFO queue, in ms. Omitted: no limit. */
  acquireTimeout?: number;
  /** With `lockTimeout`: renew the lease this often (default 80% of it; 0: never). */
  refreshInterval?: number;
  /** Ends the holding at its grant time + `maxHold` ms however it is renewed (`MAXHOLD`). */
  maxHold?: number;
  /** Called once when a holding is lost (lease end, force release, a connection that could not re-bind). */
  onLockLost?: (err: LockLostError) => void;
  /** How long a reply may take (beyond a wait) before the call is sent again on a new connection. Default 2000 ms. */
  responseTimeout?: number;
  /** Accepted for redis-semaphore compatibility and ignored: rlock waits in the server, not by polling. */
  retryInterval?: number;
  /**
   * The owner id to hold under (default: a fresh `<uuid>:<thread id>` per object). Objects
   * given the same identifier are one owner: on one key they re-enter each other, and across
   * keys the server sees one thread of control, which is what its deadlock detection needs.
   */
  identifier?: string;
}

export interface AcquireOptions {
  /** Aborting it leaves the server's queue (`RLOCK.CANCEL`) and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** This call's wait in ms, instead of the object's `acquireTimeout` (0: one attempt). */
  acquireTimeout?: number;
}

/** The lease the watchdog keeps renewing (`PX`), in ms. */
const WATCHDOG_LEASE = 30_000;

/**
 * The owner id of a lock object: `options.identifier`, or `<uuid>:<thread id>` (Redisson's
 * owner shape), unique per object.
 */
export function ownerOf(options: { identifier?: string } = {}): string {
  const id = options.identifier;
  if (id === undefined) return `${randomUUID()}:${threadId}`;
  if (typeof id !== 'string' || !id) throw new TypeError('rlock: the identifier must be a non-empty string');
  if (id.startsWith('rlock:')) throw new TypeError("rlock: identifiers starting with 'rlock:' are reserved by the server");
  return id;
}

export interface Hold {
  permits: number;
  token: number;
}

export interface Family {
  /** Message type: lock, read, write, permits. */
  type: 'lock' | 'read' | 'write' | 'permits';
  /** What the user sees in messages: "mutex", "semaphore" ... */
  noun: string;
  acquire(key: string, owner: string, permits: number): Arg[];
  release(key: string, owner: string, permits: number): Arg[];
  renew: string;
}

export abstract class Holder implements Holding {
  readonly target: string;
  readonly lease: number;
  private readonly watchdog: boolean;
  private readonly refreshInterval: number;
  protected readonly responseTimeout: number;
  private holds: Hold[] = [];
  private lost: LockLostError | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private hub: Hub | null = null;
  private readonly signals = new Set<AbortController>();

  protected constructor(
    private readonly client: unknown,
    readonly key: string,
    readonly owner: string,
    private readonly family: Family,
    protected readonly options: LockOptions = {},
  ) {
    Hub.of(client); // an unknown client fails here, not at the first acquire
    if (typeof key !== 'string' || !key) throw new TypeError('rlock: the key must be a non-empty string');
    this.target = targetOf(family.type, key, owner);
    this.watchdog = options.lockTimeout === undefined;
    this.lease = options.lockTimeout ?? WATCHDOG_LEASE;
    if (!(this.lease >= 1)) throw new RangeError('rlock: lockTimeout must be at least 1 ms');
    this.refreshInterval = this.watchdog ? 0 : options.refreshInterval ?? Math.floor(this.lease * 0.8);
    this.responseTimeout = options.responseTimeout ?? DEFAULT_RESPONSE_TIMEOUT;
  }

  /** True while this object holds (at least one hold) and the holding is not known lost. */
  get isAcquired(): boolean {
    return this.holds.length > 0 && this.lost === null;
  }

  /**
   * The fencing token of the current holding (null when not held): larger than every token
   * issued before it for this key. Pass it to the resource you protect and have it refuse
   * lower ones.
   */
  get token(): number | null {
    return this.isAcquired ? this.holds[this.holds.length - 1].token : null;
  }

  /** The owner id this object holds under, as `RLOCK.INFO` shows it. */
  get identifier(): string {
    return this.owner;
  }

  protected currentHub(): Hub {
    return Hub.of(this.client);
  }

  /** Runs before each acquire (the semaphore sets its permits). */
  protected async prepare(_hub: Hub): Promise<void> {}

  private acquireArgs(permits: number, id: string, wait?: { ms: number; clientId: number }): Arg[] {
    const args = [...this.family.acquire(this.key, this.owner, permits), 'PX', this.lease];
    if (wait) args.push('WAIT', wait.ms, 'NOTIFY', wait.clientId);
    if (this.watchdog) args.push('WATCHDOG');
    args.push('ID', id);
    if (this.options.maxHold !== undefined) args.push('MAXHOLD', this.options.maxHold);
    args.push(...this.acquireOptions());
    return args;
  }

  /** Options of this family's acquire beyond the shared ones (the Mutex's `LOCKDELAY`). */
  protected acquireOptions(): Arg[] {
    return [];
  }

  /** Takes `permits` (1 for locks): true when granted, false when not within the wait. */
  protected async take(permits: number, waiting: boolean, options: AcquireOptions = {}): Promise<boolean> {
    if (this.lost) this.forget();
    const hub = this.currentHub();
    let token: number;
    let confirm: boolean;
    try {
      await this.prepare(hub);
      const id = requestId();
      const waitMs = options.acquireTimeout ?? this.options.acquireTimeout;
      if (!waiting || (waitMs !== undefined && waitMs <= 0)) {
        options.signal?.throwIfAborted();
        const called = await hub.callEx(this.acquireArgs(permits, id), this.responseTimeout);
        if (called.reply === null || called.reply === undefined) return false;
        token = Number(called.reply);
        confirm = called.retried;
      } else {
        const waited = await hub.waitFor({
          target: this.target,
          build: (clientId, ms) => this.acquireArgs(permits, id, { ms, clientId }),
          waitMs,
          signal: options.signal,
          cancel: ['RLOCK.CANCEL', this.key, this.owner],
          release: this.family.release(this.key, this.owner, permits),
          timeout: this.responseTimeout,
        });
        if (!waited) return false;
        token = waited.token;
        // A grant by message is bound to the subscriber and renewed only once confirmed; a
        // retried call's holding may still be bound to the connection that broke.
        confirm = waited.queued || waited.retried;
      }
    } catch (err) {
      throw publicError(err);
    }
    await this.adopt(hub, permits, token, confirm);
    return true;
  }

  /**
   * Records a grant of `permits` with `token` (taken here, or by a `MultiLock` for this key):
   * registered for re-binding and loss reports, a watchdog grant confirmed when `confirm`
   * (told by message, or retried), the lease refreshed. Internal.
   */
  async adopt(hub: Hub, permits: number, token: number, confirm: boolean): Promise<void> {
    this.holds.push({ permits, token });
    this.hub = hub;
    hub.register(this);
    if (this.watchdog && confirm) {
      let still: unknown;
      try {
        still = await hub.call([this.family.renew, this.key, this.owner, 'PX', this.lease, 'WATCHDOG'], this.responseTimeout);
      } catch {
        // on a broken connection the new one re-binds every registered holding
        still = 1;
      }
      if (Number(still) !== 1) {
        this.holds.pop();
        const err = new LockLostError(`the ${this.family.noun} "${this.key}" ended before its grant was confirmed`);
        this.markLost(err.message);
        if (!this.holds.length) this.forget();
        throw err;
      }
    }
    this.startRefresh();
  }

  protected async takeOrThrow(permits: number, options?: AcquireOptions): Promise<void> {
    if (!(await this.take(permits, true, options))) {
      throw new LockTimeoutError(
        `acquire ${this.family.noun} "${this.key}" timed out after ${options?.acquireTimeout ?? this.options.acquireTimeout ?? 0} ms`,
      );
    }
  }

  /** Gives back the last hold (its permits). */
  protected async give(): Promise<void> {
    const hold = this.holds[this.holds.length - 1];
    if (!hold) throw new NotOwnedError(`the ${this.family.noun} "${this.key}" is not held by this object`);
    if (this.lost) {
      const err = this.lost;
      this.forget();
      throw err;
    }
    const hub = this.hub ?? this.currentHub();
    let reply: unknown;
    try {
      reply = await hub.call([...this.family.release(this.key, this.owner, hold.permits), 'ID', requestId()], this.responseTimeout);
    } catch (err) {
      throw publicError(err);
    }
    this.released(hold, reply);
  }

  /**
   * `hold` (the last one when undefined) was given back, here or by a `MultiLock`: `reply` is
   * the server's remaining count, or nil when the lock was no longer ours (`LockLostError`).
   * Internal.
   */
  released(hold: Hold | undefined, reply: unknown): void {
    const index = this.holds.lastIndexOf(hold ?? this.holds[this.holds.length - 1]);
    if (index >= 0) this.holds.splice(index, 1);
    if (reply === null || reply === undefined) {
      const err = new LockLostError(`the ${this.family.noun} "${this.key}" was no longer held by this object`);
      this.markLost(err.message);
      this.forget();
      throw err;
    }
    if (!this.holds.length) this.forget();
  }

  /**
   * `RLOCK.GUARD key owner token command ...`: runs `inner` (one write command) only while
   * this object holds the lock with its current token. Its reply is the inner command's.
   * Not sent again after a broken connection (the write may have run): `ConnectionError`.
   */
  protected async runGuarded(inner: Arg[]): Promise<unknown> {
    if (this.lost) throw this.lost;
    const token = this.token;
    if (token === null) throw new NotOwnedError(`the ${this.family.noun} "${this.key}" is not held by this object`);
    const hub = this.hub ?? this.currentHub();
    try {
      return await hub.call(['RLOCK.GUARD', this.key, this.owner, token, ...inner], this.responseTimeout, false);
    } catch (err) {
      if (err instanceof ServerReply && err.message.startsWith('NOTOWNER')) {
        this.markLost(`a guarded ${String(inner[0])} was refused (${err.message})`);
        throw this.lost ?? new LockLostError(err.message);
      }
      if (err instanceof ConnectionFailure) {
        throw new ConnectionError(
          `the connection failed before the reply to a guarded ${String(inner[0])}: it may or may not have run (${err.message})`,
          err,
        );
      }
      throw publicError(err);
    }
  }

  /** Stops tracking: no holds, not registered, no timers. */
  private forget(): void {
    this.holds = [];
    this.lost = null;
    this.stopRefresh();
    this.hub?.unregister(this);
    this.hub = null;
  }

  private startRefresh(): void {
    if (this.refreshTimer || this.watchdog || this.refreshInterval <= 0) return;
    let lastRenewed = Date.now();
    const tick = async () => {
      this.refreshTimer = null;
      if (!this.isAcquired || !this.hub) return;
      try {
        const still = await this.hub.call([this.family.renew, this.key, this.owner, 'PX', this.lease], this.responseTimeout);
        if (Number(still) !== 1) {
          this.markLost(`the lease of the ${this.family.noun} "${this.key}" ended before it was renewed`);
          return;
        }
        lastRenewed = Date.now();
      } catch {
        if (Date.now() - lastRenewed >= this.lease) {
          this.markLost(`the lease of the ${this.family.noun} "${this.key}" could not be renewed in time`);
          return;
        }
      }
      if (this.isAcquired) this.refreshTimer = setTimeout(tick, this.refreshInterval).unref();
    };
    this.refreshTimer = setTimeout(tick, this.refreshInterval).unref();
  }

  private stopRefresh(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
  }

  // ---- Holding (for the hub) ----

  rebindArgs(): Arg[] | null {
    if (!this.watchdog || !this.isAcquired) return null;
    return [this.family.renew, this.key, this.owner, 'PX', this.lease, 'WATCHDOG'];
  }

  hasToken(token: number): boolean {
    return this.holds.some((hold) => hold.token === token);
  }

  markLost(reason: string): void {
    if (!this.holds.length || this.lost) return;
    const err = new LockLostError(`${this.family.noun} "${this.key}" lost: ${reason}`);
    this.lost = err;
    this.stopRefresh();
    this.hub?.unregister(this);
    for (const controller of this.signals) controller.abort(err);
    const onLockLost = this.options.onLockLost;
    if (onLockLost) {
      try {
        const result: unknown = onLockLost(err);
        if (result instanceof Promise) result.catch((e) => warn(e));
      } catch (e) {
        warn(e);
      }
    }
  }

  // ---- using ----

  protected async runHeld<T>(acquire: () => Promise<void>, fn: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
    await acquire();
    const controller = new AbortController();
    this.signals.add(controller);
    if (this.lost) controller.abort(this.lost);
    let result: T;
    try {
      result = await fn(controller.signal);
    } catch (err) {
      this.signals.delete(controller);
      await this.give().catch(() => {});
      throw err;
    }
    this.signals.delete(controller);
    try {
      await this.give();
    } catch (err) {
      // A loss was already told to fn through the signal.
      if (!(err instanceof LockLostError && controller.signal.aborted)) throw err;
    }
    return result;
  }
}

function warn(err: unknown): void {
  process.emitWarning(`rlock: onLockLost threw: ${(err as Error)?.stack ?? err}`);
}
