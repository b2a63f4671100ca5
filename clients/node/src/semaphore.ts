import { settleUnconfirmed } from './confirm';
import { ReplyError, publicError } from './errors';
import { Holder } from './holder';
import { AcquireOptions, Family, LockOptions, ownerOf } from './options';
import { Session } from './session';
import { field } from './reply';

const PERMITS: Family = {
  type: 'permits',
  noun: 'semaphore',
  acquire: (key, owner, permits) => ['RSEM.ACQUIRE', key, owner, 'PERMITS', permits],
  release: (key, owner, permits) => ['RSEM.RELEASE', key, owner, 'PERMITS', permits],
  renew: 'RSEM.RENEW',
};

/**
 * A semaphore of `limit` permits (`RSEM.*`) whose permits belong to their holder: they come
 * back when its lease ends or, with the watchdog, when its process dies. In the shape of
 * redis-semaphore's `Semaphore`; the permits are set to `limit` when the semaphore does not
 * exist yet (`RSEM.SETPERMITS`).
 *
 * `acquire(permits)` may be called again on the same object (its permits add up); each
 * `release()` gives back what the latest unreleased acquire took.
 */
export class Semaphore extends Holder {
  private prepared: Promise<void> | null = null;

  constructor(client: unknown, key: string, readonly limit: number, options: LockOptions = {}) {
    super(client, key, ownerOf(options), PERMITS, options);
    if (!Number.isInteger(limit) || limit < 0) throw new RangeError('rlock: limit must be an integer >= 0');
  }

  protected override async prepare(session: Session): Promise<void> {
    if (!this.prepared) {
      this.prepared = session.confirmed(['RSEM.SETPERMITS', this.key, this.limit], this.confirm, this.responseTimeout).then(
        ([, unconfirmed]) => settleUnconfirmed(unconfirmed, `set the permits of semaphore "${this.key}"`, true),
        (err) => {
          this.prepared = null;
          throw err;
        },
      );
    }
    return this.prepared;
  }

  private static check(permits: number): void {
    if (!Number.isInteger(permits) || permits < 1) throw new RangeError('rlock: permits must be an integer >= 1');
  }

  /** Waits in the server's FIFO queue for `permits` (up to `acquireTimeout`). */
  acquire(permits = 1, options?: AcquireOptions): Promise<void> {
    Semaphore.check(permits);
    return this.takeOrThrow(permits, options);
  }

  /** One attempt: true when the permits were granted. */
  tryAcquire(permits = 1): Promise<boolean> {
    Semaphore.check(permits);
    return this.take(permits, false);
  }

  /** Gives back the permits of the latest unreleased acquire. */
  release(): Promise<void> {
    return this.give();
  }

  using<T>(fn: (signal: AbortSignal) => Promise<T> | T, permits = 1, options?: AcquireOptions): Promise<T> {
    return this.runHeld(() => this.acquire(permits, options), fn);
  }

  /**
   * Sets the permits to `permits` when the semaphore does not exist yet (Redisson's
   * `trySetPermits`, `RSEM.SETPERMITS`): true when set, false when it existed.
   */
  async trySetPermits(permits: number): Promise<boolean> {
    if (!Number.isInteger(permits) || permits < 0) throw new RangeError('rlock: permits must be an integer >= 0');
    return Number(await this.adminCall(['RSEM.SETPERMITS', this.key, permits], true)) === 1;
  }

  /** Adds `permits` (negative: removes) to the available ones and lets waiters in; the permits available now. */
  async addPermits(permits: number): Promise<number> {
    if (!Number.isInteger(permits)) throw new RangeError('rlock: permits must be an integer');
    return Number(await this.adminCall(['RSEM.ADDPERMITS', this.key, permits], true));
  }

  /** `write`: confirmed by the replicas. */
  private async adminCall(args: Array<string | number>, write = false): Promise<unknown> {
    let reply: unknown;
    let unconfirmed;
    try {
      [reply, unconfirmed] = await this.currentSession().confirmed(args, write ? this.confirm : null, this.responseTimeout);
    } catch (err) {
      throw publicError(err);
    }
    settleUnconfirmed(unconfirmed, `${args[0]} "${this.key}"`, true);
    return reply;
  }

  /** The permits available now (`RSEM.INFO`'s `available`; `limit` before the first acquire). */
  async available(): Promise<number> {
    const reply = await this.adminCall(['RSEM.INFO', this.key]);
    if (reply === null || reply === undefined) return this.limit;
    const value = field(reply, 'available');
    if (value === undefined) throw new ReplyError('ERR unexpected RSEM.INFO reply');
    return Number(value);
  }
}
