import { publicError } from './errors';
import { AcquireOptions } from './options';
import { targetOf } from './dispatcher';
import { DEFAULT_RESPONSE_TIMEOUT, requestId } from './request';
import { Session } from './session';

/**
 * A count-down latch (`RLATCH.*`, Redisson's `RCountDownLatch` layout): set a count once,
 * count it down from anywhere, and wait for it to reach 0.
 */
export class CountDownLatch {
  private readonly responseTimeout: number;

  constructor(private readonly client: unknown, readonly key: string, options: { responseTimeout?: number } = {}) {
    Session.of(client);
    this.responseTimeout = options.responseTimeout ?? DEFAULT_RESPONSE_TIMEOUT;
  }

  private async call(args: Array<string | number>): Promise<unknown> {
    try {
      return await Session.of(this.client).call(args, this.responseTimeout);
    } catch (err) {
      throw publicError(err);
    }
  }

  /** Sets the count when the latch is not set (or already open): true; else false. */
  async trySetCount(count: number): Promise<boolean> {
    if (!Number.isInteger(count) || count < 1) throw new RangeError('rlock: count must be an integer >= 1');
    return Number(await this.call(['RLATCH.SET', this.key, count])) === 1;
  }

  /** Counts down by one (once, even when the call is retried after a dropped connection); the remaining count. */
  async countDown(): Promise<number> {
    return Number(await this.call(['RLATCH.COUNTDOWN', this.key, 'ID', requestId()]));
  }

  /** The remaining count (0 when open or never set). */
  async getCount(): Promise<number> {
    return Number(await this.call(['RLATCH.COUNT', this.key]));
  }

  /**
   * Waits until the count reaches 0: true, or false after `timeoutMs` (omitted: no limit).
   * Waits on the client's shared subscriber: no connection of its own, none blocked.
   */
  async wait(timeoutMs?: number, options: AcquireOptions = {}): Promise<boolean> {
    if (timeoutMs !== undefined && timeoutMs <= 0) {
      return Number(await this.call(['RLATCH.AWAIT', this.key])) === 1;
    }
    try {
      const waited = await Session.of(this.client).waitFor({
        target: targetOf('latch', this.key, ''),
        build: (clientId, ms) => ['RLATCH.AWAIT', this.key, 'WAIT', ms, 'NOTIFY', clientId],
        waitMs: timeoutMs,
        signal: options.signal,
        cancel: null,
        release: null,
        timeout: this.responseTimeout,
      });
      return waited !== null;
    } catch (err) {
      throw publicError(err);
    }
  }
}
