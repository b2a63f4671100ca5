/**
 * Leader election with etcd's verbs over one rlock key: candidates queue for a watchdog lock
 * under their candidate id (FIFO), the holder leads, its fencing token is its term.
 */

import type { ConfirmSetting } from './confirm';
import { Arg } from './drivers/driver';
import { LockLostError, NotOwnedError, publicError } from './errors';
import { DEFAULT_RESPONSE_TIMEOUT } from './request';
import { Session } from './session';
import { Mutex } from './mutex';
import { Leader, LeaderObserver, parseLeader } from './observe';

export interface ElectionOptions {
  /**
   * Called once when leadership ends other than by `resign()`: the leader's connection dropped
   * and could not re-bind its lock, the lock was force-released or deleted, the user's client
   * was closed. Also settable as `election.onLost`.
   */
  onLost?: (err: LockLostError) => void;
  /** How long a reply may take before the call is sent again on a new connection. Default 2000 ms. */
  responseTimeout?: number;
  /** Confirmation by the replicas of the leadership and of `resign()` (as `LockOptions.confirm`). */
  confirm?: ConfirmSetting;
}

export interface CampaignOptions {
  /** Aborting it leaves the queue (`RLOCK.CANCEL`) and rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * One candidate in the election `name` (the lock key, used as given), running as `candidate`:
 * the owner id every participant sees as the leader (put what followers need in it, such as
 * the candidate's address). Candidate ids must be unique: two objects with one id are one
 * candidate.
 */
export class Election {
  /** Called once when leadership ends other than by `resign()` (see `ElectionOptions.onLost`). */
  onLost: ((err: LockLostError) => void) | undefined;
  private readonly mutex: Mutex;
  private readonly responseTimeout: number;
  private campaigning: { promise: Promise<number>; controller: AbortController } | null = null;

  constructor(
    private readonly client: unknown,
    readonly name: string,
    readonly candidate: string,
    options: ElectionOptions = {},
  ) {
    this.onLost = options.onLost;
    this.responseTimeout = options.responseTimeout ?? DEFAULT_RESPONSE_TIMEOUT;
    this.mutex = new Mutex(client, name, {
      identifier: candidate,
      responseTimeout: this.responseTimeout,
      confirm: options.confirm,
      onLockLost: (err) => this.onLost?.(err),
    });
  }

  /** True while this candidate leads (as far as it knows: `onLost` tells when that ends). */
  get isLeader(): boolean {
    return this.mutex.isAcquired;
  }

  /** This candidate's term while it leads, else null. */
  get term(): number | null {
    return this.mutex.token;
  }

  /**
   * Waits (in the server's FIFO queue, by message: no blocked connection) until this candidate
   * leads, and resolves with its term. Leading already: its term at once. A campaign under way:
   * the same promise.
   */
  campaign(options: CampaignOptions = {}): Promise<number> {
    if (this.mutex.isAcquired) return Promise.resolve(this.mutex.token!);
    if (this.campaigning) return this.campaigning.promise;
    const controller = new AbortController();
    const { signal } = options;
    const onAbort = () => controller.abort(signal!.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    const promise = this.mutex
      .acquire({ signal: controller.signal })
      .then(() => this.mutex.token!)
      .finally(() => {
        signal?.removeEventListener('abort', onAbort);
        this.campaigning = null;
      });
    this.campaigning = { promise, controller };
    return promise;
  }

  /**
   * Gives up leadership (the next candidate leads at once), or stops a campaign under way
   * (it rejects with an `AbortError`). A leadership already lost is reported by `onLost`, not here.
   */
  async resign(): Promise<void> {
    const running = this.campaigning;
    if (running) {
      running.controller.abort(new DOMException('the candidate resigned', 'AbortError'));
      await running.promise.catch(() => {});
    }
    try {
      await this.mutex.release();
    } catch (err) {
      if (!(err instanceof NotOwnedError)) throw err;
    }
  }

  /** The current leader (`RLOCK.LEADER`): owner (its candidate id), term and lease left, or null. */
  async leader(): Promise<Leader | null> {
    let reply: unknown;
    try {
      reply = await Session.of(this.client, this.name).call(['RLOCK.LEADER', this.name], this.responseTimeout);
    } catch (err) {
      throw publicError(err);
    }
    return parseLeader(reply);
  }

  /**
   * The leader now, then every change (null while nobody leads), driven by keyspace events:
   * the server must publish them (`notify-keyspace-events` with `K` and `d`; `Kdgx` to also
   * see expiry and `DEL`), else the first `next()` rejects (`ERR_RLOCK_NO_EVENTS`). Opens a
   * connection of its own, closed by `return()` (a `break`), the signal, or the client closing.
   */
  observe(options: { signal?: AbortSignal } = {}): LeaderObserver {
    return new LeaderObserver(Session.of(this.client, this.name), this.name, () => this.leader(), this.responseTimeout, options.signal);
  }

  /** A write run only while this candidate leads in its current term (`Mutex.guard`). */
  guard(command: string, ...args: Arg[]): Promise<unknown> {
    return this.mutex.guard(command, ...args);
  }
}
