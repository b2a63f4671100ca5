/**
 * Several locks taken all or none in one step (`RLOCK.ACQUIREALL` / `RLOCK.RELEASEALL`): a
 * waiting request holds one place in each key's queue and is let in only when it can take
 * every key at once, so it never holds part of them. Each key becomes an ordinary `Mutex`
 * holding of the MultiLock's owner.
 */

import { Arg } from './drivers/driver';
import { LockLostError, LockTimeoutError, NotOwnedError, publicError } from './errors';
import { AcquireOptions, ownerOf } from './holder';
import { Hub, requestId, targetOf } from './hub';
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
    this.owner = ownerOf(options);
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
    if (!(await this.take(true, options))) {
      throw new LockTimeoutError(`acquire multi-lock [${this.keys.join(', ')}] timed out after ${options?.acquireTimeout ?? this.options.acquireTimeout ?? 0} ms`);
    }
    return this;
  }

  /** One attempt: true when every key was taken, false (nothing taken) when any is another's. */
  tryAcquire(): Promise<boolean> {
    return this.take(false);
  }

  private args(id: string, wait?: { ms: number; clientId: number }): Arg[] {
    const { lockTimeout, maxHold, lockDelay } = this.options;
    const args: Arg[] = ['RLOCK.ACQUIREALL', this.keys.length, ...this.keys, this.owner, 'PX', lockTimeout ?? this.mutexes[0].lease];
    if (wait) args.push('WAIT', wait.ms, 'NOTIFY', wait.clientId);
    if (lockTimeout === undefined) args.push('WATCHDOG');
    args.push('ID', id);
    if (maxHold !== undefined) args.push('MAXHOLD', maxHold);
    if (lockDelay !== undefined) args.push('LOCKDELAY', lockDelay);
    return args;
  }

  private async take(waiting: boolean, options: AcquireOptions = {}): Promise<boolean> {
    const hub = Hub.of(this.client);
    const id = requestId();
    const waitMs = options.acquireTimeout ?? this.options.acquireTimeout;
    let tokens: number[];
    let confirm: boolean;
    try {
      if (!waiting || (waitMs !== undefined && waitMs <= 0)) {
        options.signal?.throwIfAborted();
        const called = await hub.callEx(this.args(id), this.options.responseTimeout);
        if (called.reply === null || called.reply === undefined) return false;
        tokens = (called.reply as unknown[]).map(Number);
        confirm = called.retried;
      } else {
        const [target, ...more] = this.keys.map((key) => targetOf('lock', key, this.owner));
        const waited = await hub.waitFor({
          target,
          more,
          build: (clientId, ms) => this.args(id, { ms, clientId }),
          waitMs,
          signal: options.signal,
          // One cancel takes the request out of every key's queue.
          cancel: ['RLOCK.CANCEL', this.keys[0], this.owner],
          release: null,
          timeout: this.options.responseTimeout ?? 2000,
        });
        if (!waited) return false;
        tokens = waited.tokens;
        confirm = waited.queued || waited.retried;
      }
    } catch (err) {
      throw publicError(err);
    }
    const adopted = await Promise.allSettled(this.mutexes.map((mutex, i) => mutex.adopt(hub, 1, tokens[i], confirm)));
    const failed = adopted.find((result) => result.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) {
      // Part of it ended before it was confirmed: give back the rest, all or none.
      const held = this.mutexes.filter((_, i) => adopted[i].status === 'fulfilled');
      await this.releaseAll(held).catch(() => {});
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
    const hub = Hub.of(this.client);
    const keys = mutexes.map((mutex) => mutex.key);
    let reply: unknown;
    try {
      reply = await hub.call(['RLOCK.RELEASEALL', keys.length, ...keys, this.owner, 'ID', requestId()], this.options.responseTimeout);
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
