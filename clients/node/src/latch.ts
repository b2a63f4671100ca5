import { Confirm, ConfirmSetting, resolveConfirm, settleUnconfirmed } from './confirm';
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
  private readonly confirm: Confirm | null;

  /** `confirm`: confirmation by the replicas of `trySetCount` and `countDown` (as `LockOptions.confirm`). */
  constructor(
    private readonly client: unknown,
    readonly key: string,
    options: { responseTimeout?: number; confirm?: ConfirmSetting } = {},
  ) {
    Session.of(client, key);
    this.responseTimeout = options.responseTimeout ?? DEFAULT_RESPONSE_TIMEOUT;
    this.confirm = resolveConfirm(options.confirm);
  }

  /** `write`: confirmed by the replicas. */
  private async call(args: Array<string | number>, write = false): Promise<unknown> {
    let reply: unknown;
    let unconfirmed;
    try {
      [reply, unconfirmed] = await Session.of(this.client, this.key).confirmed(args, write ? this.confirm : null, this.responseTimeout);
    } catch (err) {
      throw publicError(err);
    }
    settleUnconfirmed(unconfirmed, `${args[0]} "${this.key}"`, true);
    return reply;
  }

  /**
   * Sets the count when the latch is not set (or already open): true; else false. With a
   * request id, so a retry after a dropped connection answers as the first call (true again).
   */
  async trySetCount(count: number): Promise<boolean> {
    if (!Number.isInteger(count) || count < 1) throw new RangeError('rlock: count must be an integer >= 1');
    return Number(await this.call(['RLATCH.SET', this.key, count, 'ID', requestId()], true)) === 1;
  }

  /** Counts down by one (once, even when the call is retried after a dropped connection); the remaining count. */
  async countDown(): Promise<number> {
    return Number(await this.call(['RLATCH.COUNTDOWN', this.key, 'ID', requestId()], true));
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
      const waited = await Session.of(this.client, this.key).waitFor({
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
