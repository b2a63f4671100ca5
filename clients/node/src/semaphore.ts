import { settleUnconfirmed } from './confirm';
import { ReplyError, publicError } from './errors';
import { Holder } from './holder';
import { AcquireArg, Family, Hold, LockOptions, acquireOptionsOf, ownerOf } from './options';
import { Session } from './session';
import { field } from './reply';
import { requestId } from './request';

const PERMITS: Family = {
  type: 'permits',
  noun: 'semaphore',
  acquire: (key, owner, permits) => ['RSEM.ACQUIRE', key, owner, 'PERMITS', permits],
  release: (key, owner, permits) => ['RSEM.RELEASE', key, owner, 'PERMITS', permits],
  renew: 'RSEM.RENEW',
  info: 'RSEM.INFO',
  heldBy: (info, owner) => {
    const holders = info ? field(info, 'holders') : undefined;
    const mine = Array.isArray(holders) ? holders.find((holder) => field(holder, 'owner') === owner) : undefined;
    return mine ? ({ permits: Number(field(mine, 'permits')), token: Number(field(mine, 'token')) } as Hold) : null;
  },
};

/** Permits given first, or redis-semaphore's `acquire(signal)`: the permits and the options. */
function permitsAndOptions(first: number | AcquireArg, second: AcquireArg, fixed?: number): [number, AcquireArg] {
  if (first === undefined || typeof first === 'number') return [fixed ?? first ?? 1, second];
  return [fixed ?? 1, first];
}

/** Set only while `Semaphore.ofPermitsSetElsewhere` constructs (construction is synchronous). */
let zeroAllowed = false;

/** redis-semaphore's checks and messages: a limit is a whole number of at least 1. */
export function checkLimit(limit: unknown, orZero = false): void {
  if (limit === undefined || limit === null || (limit === 0 && !orZero)) throw new TypeError('rlock: "limit" is required');
  if (typeof limit !== 'number') throw new TypeError('rlock: "limit" must be a number');
  if (!Number.isInteger(limit) || limit < 0) throw new RangeError('rlock: "limit" must be an integer >= 1');
}

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

  constructor(
    client: unknown,
    key: string,
    readonly limit: number,
    options: LockOptions = {},
    family: Family = PERMITS,
  ) {
    super(client, key, ownerOf(options), family, options);
    checkLimit(limit, zeroAllowed);
  }

  /**
   * A semaphore whose permits are set elsewhere (`setPermits`, `addPermits`, another process):
   * its acquires never set them, and it has none until they are (a `limit` of 0, which the
   * constructor refuses as redis-semaphore's does, since there it can only be a mistake).
   */
  static ofPermitsSetElsewhere(client: unknown, key: string, options: LockOptions = {}): Semaphore {
    zeroAllowed = true;
    try {
      return new Semaphore(client, key, 0, options);
    } finally {
      zeroAllowed = false;
    }
  }

  /** The same family under another name in messages (MultiSemaphore's "multi-semaphore"). */
  protected static familyNamed(noun: string): Family {
    return { ...PERMITS, noun };
  }

  protected override prepare(session: Session): Promise<void> {
    if (!this.prepared) {
      this.prepared = session
        .confirmed(['RSEM.SETPERMITS', this.key, this.limit, 'ID', requestId()], this.confirm, this.responseTimeout)
        .then(
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

  /** The permits every acquire takes when not given (MultiSemaphore's fixed count). */
  protected fixedPermits(): number | undefined {
    return undefined;
  }

  /**
   * Waits in the server's FIFO queue for `permits` (up to `acquireTimeout`).
   * `acquire(signal)`, redis-semaphore's form, takes one permit.
   */
  acquire(permits?: number | AcquireArg, options?: AcquireArg): Promise<void> {
    const [count, rest] = permitsAndOptions(permits, options, this.fixedPermits());
    Semaphore.check(count);
    return this.takeOrThrow(count, acquireOptionsOf(rest));
  }

  /** One attempt: true when the permits were granted. */
  tryAcquire(permits?: number | AbortSignal): Promise<boolean> {
    const [count, rest] = permitsAndOptions(permits, undefined, this.fixedPermits());
    Semaphore.check(count);
    return this.take(count, false, acquireOptionsOf(rest));
  }

  /** Gives back the permits of the latest unreleased acquire. */
  release(): Promise<void> {
    return this.give();
  }

  using<T>(fn: (signal: AbortSignal) => Promise<T> | T, permits?: number | AcquireArg, options?: AcquireArg): Promise<T> {
    return this.runHeld(() => this.acquire(permits, options), fn);
  }

  /**
   * Sets the permits to `permits` when the semaphore does not exist yet (Redisson's
   * `trySetPermits`, `RSEM.SETPERMITS`): true when set, false when it existed. With a request
   * id, so a retry after a dropped connection answers as the first call (true again).
   */
  async trySetPermits(permits: number): Promise<boolean> {
    if (!Number.isInteger(permits) || permits < 0) throw new RangeError('rlock: permits must be an integer >= 0');
    return Number(await this.adminCall(['RSEM.SETPERMITS', this.key, permits, 'ID', requestId()], true)) === 1;
  }

  /** Adds `permits` (negative: removes) to the available ones and lets waiters in; the permits available now (once, even when retried). */
  async addPermits(permits: number): Promise<number> {
    if (!Number.isInteger(permits)) throw new RangeError('rlock: permits must be an integer');
    return Number(await this.adminCall(['RSEM.ADDPERMITS', this.key, permits, 'ID', requestId()], true));
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
