import { AcquireOptions, Family, Holder, LockOptions, ownerOf } from './holder';

const LOCK: Family = {
  type: 'lock',
  noun: 'mutex',
  acquire: (key, owner) => ['RLOCK.ACQUIRE', key, owner],
  release: (key, owner) => ['RLOCK.RELEASE', key, owner],
  renew: 'RLOCK.RENEW',
};

/**
 * A reentrant, fair, fenced lock (`RLOCK.*`), in the shape of redis-semaphore's `Mutex`.
 *
 * The object has its own owner id: acquiring again through the same object re-enters (each
 * `release()` gives back one hold); two objects exclude each other.
 */
export class Mutex extends Holder {
  constructor(client: unknown, key: string, options: LockOptions = {}) {
    super(client, key, ownerOf(options), LOCK, options);
  }

  /** Waits in the server's FIFO queue (up to `acquireTimeout`); rejects with `LockTimeoutError`. */
  acquire(options?: AcquireOptions): Promise<void> {
    return this.takeOrThrow(1, options);
  }

  /** One attempt: true when held (or re-entered), false when another owner holds it. */
  tryAcquire(): Promise<boolean> {
    return this.take(1, false);
  }

  /** Gives back one hold; rejects with `LockLostError` when the lock was no longer ours. */
  release(): Promise<void> {
    return this.give();
  }

  /** Acquires, runs `fn` with a signal that aborts if the lock is lost, and releases. */
  using<T>(fn: (signal: AbortSignal) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return this.runHeld(() => this.acquire(options), fn);
  }
}
