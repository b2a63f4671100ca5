import { Arg } from './drivers/driver';
import { Holder } from './holder';
import { field } from './reply';
import { AcquireArg, Family, LockOptions, acquireOptionsOf, ownerOf } from './options';

const LOCK: Family = {
  type: 'lock',
  noun: 'mutex',
  acquire: (key, owner) => ['RLOCK.ACQUIRE', key, owner],
  release: (key, owner) => ['RLOCK.RELEASE', key, owner],
  renew: 'RLOCK.RENEW',
  info: 'RLOCK.INFO',
  heldBy: (info, owner) => (info && field(info, 'owner') === owner ? { permits: 1, token: Number(field(info, 'token')) } : null),
};

export interface MutexOptions extends LockOptions {
  /**
   * Lock-delay in ms (`LOCKDELAY`): when a holding ends other than by its owner's release
   * (its lease ran out, its watchdog connection closed, `maxHold`), nobody gets the lock for
   * this long, so a holder that paused past its lease has that long to notice before another
   * acts. Waiters keep their places. `release()` and `RLOCK.FORCERELEASE` skip it.
   */
  lockDelay?: number;
}

/**
 * A reentrant, fair, fenced lock (`RLOCK.*`), in the shape of redis-semaphore's `Mutex`.
 *
 * The object has its own owner id: acquiring again through the same object re-enters (each
 * `release()` gives back one hold); two objects exclude each other.
 */
export class Mutex extends Holder {
  constructor(client: unknown, key: string, options: MutexOptions = {}) {
    super(client, key, ownerOf(options), LOCK, options);
    const delay = options.lockDelay;
    if (delay !== undefined && !(Number.isInteger(delay) && delay >= 1)) {
      throw new RangeError('rlock: lockDelay must be a whole number of ms >= 1');
    }
  }

  protected override acquireOptions(): Arg[] {
    const delay = (this.options as MutexOptions).lockDelay;
    return delay === undefined ? [] : ['LOCKDELAY', delay];
  }

  /**
   * Waits in the server's FIFO queue (up to `acquireTimeout`); rejects with `LockTimeoutError`.
   * `acquire(signal)`, redis-semaphore's form, is `acquire({ signal })`.
   */
  acquire(options?: AcquireArg): Promise<void> {
    return this.takeOrThrow(1, acquireOptionsOf(options));
  }

  /** One attempt: true when held (or re-entered), false when another owner holds it. */
  tryAcquire(signal?: AbortSignal): Promise<boolean> {
    return this.take(1, false, { signal });
  }

  /** Gives back one hold; rejects with `LockLostError` when the lock was no longer ours. */
  release(): Promise<void> {
    return this.give();
  }

  /**
   * Runs one write command (`guard('SET', 'balance', '10')`) only while this object holds the
   * lock with its current fencing token, checked and run in one step by the server
   * (`RLOCK.GUARD`). Resolves with the command's reply. Rejects with `LockLostError` when the
   * server says the holding is no longer ours (nothing ran; `onLockLost` is called), with
   * `NotOwnedError` when this object holds nothing, with `ConnectionError` when the connection
   * broke before the reply (the write may have run: it is not sent twice).
   */
  guard(command: string, ...args: Arg[]): Promise<unknown> {
    return this.runGuarded([command, ...args]);
  }

  /** Acquires, runs `fn` with a signal that aborts if the lock is lost, and releases. */
  using<T>(fn: (signal: AbortSignal) => Promise<T> | T, options?: AcquireArg): Promise<T> {
    return this.runHeld(() => this.acquire(options), fn);
  }
}
