/**
 * Several locks taken all or none in one step (`RLOCK.ACQUIREALL` / `RLOCK.RELEASEALL`): a
 * waiting request holds one place in each key's queue and is let in only when it can take
 * every key at once, so it never holds part of them. Each key becomes an ordinary `Mutex`
 * holding of the MultiLock's owner.
 */

import { Confirm, Unconfirmed, resolveConfirm, settleUnconfirmed } from './confirm';
import { Arg } from './drivers/driver';
import { LockLostError, LockTimeoutError, NotOwnedError, publicError } from './errors';
import { targetOf } from './dispatcher';
import { acquire, acquireTail } from './acquire';
import { AcquireOptions, checkAcquireTimeout, ownerOf } from './options';
import { DEFAULT_RESPONSE_TIMEOUT, requestId } from './request';
import { Router } from './router';
import { Session } from './session';
import { Mutex, MutexOptions } from './mutex';

/**
 * Options of a `MultiLock`: a `Mutex`'s (lease, watchdog, wait, `maxHold`, `lockDelay`,
 * `identifier`, `onLockLost` per key). `onLockLost` is called for each key whose holding is lost.
 */
export type MultiLockOptions = MutexOptions;

/**
 * An all-or-none lock over `keys` (1 to 1000, distinct; in Redis Cluster they must share a
 * slot). One owner id for the object, as a `Mutex` has: a key this owner holds already (through
 * a `Mutex` given the same `identifier`) is re-entered. `acquire()` waits (up to
 * `acquireTimeout`) until every key is granted at once; `tokens` are then the fencing tokens in
 * key order. A wait that would close a cycle of owners rejects with `DeadlockError` at once.
 */
export class MultiLock {
  readonly keys: readonly string[];
  readonly owner: string;
  /** One Mutex per key, under this object's owner: what tracks each key's holding. */
  readonly mutexes: readonly Mutex[];
  private readonly confirm: Confirm | null;

  constructor(
    private readonly client: unknown,
    keys: readonly string[],
    private readonly options: MultiLockOptions = {},
  ) {
    if (!Array.isArray(keys) || keys.length < 1 || keys.length > 1000) {
      throw new RangeError('rlock: a MultiLock takes 1 to 1000 keys');
    }
    if (new Set(keys).size !== keys.length) throw new TypeError('rlock: a key is named more than once');
    this.keys = [...keys];
    Router.of(client).checkOneSlot(keys, `the MultiLock [${keys.join(', ')}]`);
    this.owner = ownerOf(options);
    checkAcquireTimeout(options.acquireTimeout);
    this.confirm = resolveConfirm(options.confirm);
    this.mutexes = this.keys.map((key) => new Mutex(client, key, { ...options, identifier: this.owner }));
  }

  /** The owner id this object holds under, as `RLOCK.INFO` shows it. */
  get identifier(): string {
    return this.owner;
  }

  /** True while every key is held by this object and none is known lost. */
  get isAcquired(): boolean {
    return this.mutexes.every((mutex) => mutex.isAcquired);
  }

  /** The fencing tokens of the current holding, in key order (null when not held). */
  get tokens(): number[] | null {
    return this.isAcquired ? this.mutexes.map((mutex) => mutex.token!) : null;
  }

  /**
   * Waits in every key's queue (up to `acquireTimeout`, told by messages) until all are granted
   * at once; rejects with `LockTimeoutError` (nothing held), `DeadlockError`, `WrongTypeError`.
   * Resolves with this object (`tokens`, `release()`).
   */
  async acquire(options?: AcquireOptions): Promise<this> {
    checkAcquireTimeout(options?.acquireTimeout);
    if (!(await this.take(true, options))) {
      throw new LockTimeoutError(
        `acquire multi-lock [${this.keys.join(', ')}] timed out after ${options?.acquireTimeout ?? this.options.acquireTimeout ?? 0} ms`,
      );
    }
    return this;
  }

  /** One attempt: true when every key was taken, false (nothing taken) when any is another's. */
  tryAcquire(): Promise<boolean> {
    return this.take(false);
  }

  /** `RLOCK.ACQUIREALL numkeys key... owner` and the options every acquire ends with. */
  private args(id: string, wait?: { ms: number; clientId: number }): Arg[] {
    const { lockTimeout, maxHold, lockDelay } = this.options;
    const args: Arg[] = ['RLOCK.ACQUIREALL', this.keys.length, ...this.keys, this.owner];
    acquireTail(args, { lease: lockTimeout ?? this.mutexes[0].lease, watchdog: lockTimeout === undefined, id, wait, maxHold });
    if (lockDelay !== undefined) args.push('LOCKDELAY', lockDelay);
    return args;
  }

  /** The one core's acquire (holder.ts) over every key; each key's grant is adopted by its Mutex. */
  private async take(waiting: boolean, options: AcquireOptions = {}): Promise<boolean> {
    const session = Session.of(this.client, this.keys[0]);
    let granted;
    try {
      granted = await acquire(session, {
        args: (id, wait) => this.args(id, wait),
        targets: this.keys.map((key) => targetOf('lock', key, this.owner)),
        waitMs: waiting ? (options.acquireTimeout ?? this.options.acquireTimeout) : 0,
        signal: options.signal,
        cancel: ['RLOCK.CANCEL', this.keys[0], this.owner],
        release: null,
        timeout: this.options.responseTimeout ?? DEFAULT_RESPONSE_TIMEOUT,
        confirm: this.confirm,
      });
    } catch (err) {
      throw publicError(err);
    }
    if (!granted) return false;
    const { tokens, confirm, unconfirmed, session: grantedOn } = granted;
    if (unconfirmed && unconfirmed.onFailure === 'raise') {
      // Not confirmed: given back all at once, nothing held.
      await grantedOn.call(['RLOCK.RELEASEALL', this.keys.length, ...this.keys, this.owner, 'ID', requestId()]).catch(() => {});
    }
    settleUnconfirmed(unconfirmed, `acquire multi-lock [${this.keys.join(', ')}]`, false);
    const adopted = await Promise.allSettled(this.mutexes.map((mutex, i) => mutex.adopt(grantedOn, 1, tokens[i], confirm)));
    const failed = adopted.find((result) => result.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) {
      // Part of it ended before it was confirmed: give back the rest, all or none.
      const held = this.mutexes.filter((_, i) => adopted[i].status === 'fulfilled');
      if (held.length) await this.releaseAll(held).catch(() => {});
      throw failed.reason;
    }
    return true;
  }

  /**
   * Gives back one hold of every key in one step (`RLOCK.RELEASEALL`). Rejects with
   * `NotOwnedError` when nothing is held, with `LockLostError` when a key was no longer ours
   * (the others are released all the same).
   */
  async release(): Promise<void> {
    if (!this.mutexes.some((mutex) => mutex.isAcquired)) {
      throw new NotOwnedError(`the multi-lock [${this.keys.join(', ')}] is not held by this object`);
    }
    await this.releaseAll(this.mutexes);
  }

  private async releaseAll(mutexes: readonly Mutex[]): Promise<void> {
    const session = Session.of(this.client, this.keys[0]);
    const keys = mutexes.map((mutex) => mutex.key);
    let reply: unknown;
    let unconfirmed: Unconfirmed | undefined;
    try {
      const args = ['RLOCK.RELEASEALL', keys.length, ...keys, this.owner, 'ID', requestId()];
      [reply, unconfirmed] = await session.confirmed(args, this.confirm, this.options.responseTimeout);
    } catch (err) {
      throw publicError(err);
    }
    const counts = reply as unknown[];
    let lost: unknown = null;
    mutexes.forEach((mutex, i) => {
      try {
        mutex.released(undefined, counts[i]);
      } catch (err) {
        lost ??= err;
      }
    });
    if (lost) throw lost instanceof LockLostError ? lost : publicError(lost);
    settleUnconfirmed(unconfirmed, `release multi-lock [${keys.join(', ')}]`, true);
  }

  /** Acquires, runs `fn`, and releases (also when `fn` throws). */
  async using<T>(fn: () => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    await this.acquire(options);
    try {
      return await fn();
    } finally {
      await this.release();
    }
  }
}
