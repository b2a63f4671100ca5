import { LockOptions } from './options';
import { Semaphore } from './semaphore';

/**
 * redis-semaphore's `MultiSemaphore`: a `Semaphore` whose every acquire takes `permits` of
 * its `limit` at once (`acquire(signal?)`, `tryAcquire()`), given back together by `release()`.
 * The same permits as `Semaphore`'s on the same key: the two share them.
 */
export class MultiSemaphore extends Semaphore {
  constructor(
    client: unknown,
    key: string,
    limit: number,
    readonly permits: number,
    options: LockOptions = {},
  ) {
    super(client, key, limit, options, Semaphore.familyNamed('multi-semaphore'));
    if (!permits) throw new TypeError('rlock: "permits" is required');
    if (typeof permits !== 'number') throw new TypeError('rlock: "permits" must be a number');
    if (!Number.isInteger(permits) || permits < 1) throw new RangeError('rlock: "permits" must be an integer >= 1');
  }

  protected override fixedPermits(): number {
    return this.permits;
  }
}
