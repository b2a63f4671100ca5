/**
 * What Mutex, Semaphore and the read and write sides of ReadWriteLock share: one owner id per
 * object, acquire (waiting with NOTIFY) and tryAcquire, release, the fencing token, the
 * watchdog or a refreshed lease, loss reports, and `using`.
 */

import { Confirm, Unconfirmed, resolveConfirm, settleUnconfirmed } from './confirm';
import { Arg } from './drivers/driver';
import { ConnectionError, ConnectionFailure, LockLostError, LockTimeoutError, NotOwnedError, ServerReply, publicError } from './errors';
import { Holding, Waiter, targetOf } from './dispatcher';
import { Granted, SentFirst, acquire } from './acquire';
import { AcquireOptions, Family, Hold, LockOptions, WATCHDOG_LEASE, adoptsExternally, checkAcquireTimeout } from './options';
import { DEFAULT_RESPONSE_TIMEOUT, requestId } from './request';
import { Called, DIRECT, NOT_FOLLOWED, Session, Subscriber } from './session';

const NO_OPTIONS: AcquireOptions = {};

interface AcquireWords {
  permits: number;
  /** `<family's words> PX <lease>` */
  head: Arg[];
  /** What follows `ID <id>`: `MAXHOLD`, the family's own (`LOCKDELAY`). */
  tail: Arg[];
}

export abstract class Holder implements Holding {
  readonly target: string;
  readonly lease: number;
  private readonly watchdog: boolean;
  private readonly refreshInterval: number;
  protected readonly responseTimeout: number;
  private holds: Hold[] = [];
  private lost: LockLostError | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  /** The words of every acquire of a number of permits (`acquireArgs`). */
  private acquireWords: AcquireWords | null = null;
  /** What gives back the permits of an acquire nobody claims (`releaseOf`). */
  private releaseArgs: { permits: number; args: Arg[] } | null = null;
  private session: Session | null = null;
  private readonly signals = new Set<AbortController>();
  /** `acquiredExternally`: the next acquire adopts the holding taken elsewhere under our owner id. */
  private adoptPending: boolean;
  /** Confirmation by the replicas of every acquisition and release (null: off). */
  protected readonly confirm: Confirm | null;

  protected constructor(
    private readonly client: unknown,
    readonly key: string,
    readonly owner: string,
    private readonly family: Family,
    protected readonly options: LockOptions = {},
  ) {
    checkClientAndKey(client, key);
    Session.of(client, key); // an unknown client fails here, not at the first acquire
    this.target = targetOf(family.type, key, owner);
    this.watchdog = options.lockTimeout === undefined;
    this.lease = options.lockTimeout ?? WATCHDOG_LEASE;
    if (!(this.lease >= 1)) throw new RangeError('rlock: lockTimeout must be at least 1 ms');
    checkAcquireTimeout(options.acquireTimeout);
    this.refreshInterval = this.watchdog ? 0 : (options.refreshInterval ?? Math.floor(this.lease * 0.8));
    this.responseTimeout = options.responseTimeout ?? DEFAULT_RESPONSE_TIMEOUT;
    this.confirm = resolveConfirm(options.confirm);
    this.adoptPending = adoptsExternally(options);
    if (this.adoptPending && !family.heldBy) throw new TypeError(`rlock: acquiredExternally is not supported by this ${family.noun}`);
  }

  /** True while this object holds (at least one hold) and the holding is not known lost. */
  get isAcquired(): boolean {
    return this.holds.length > 0 && this.lost === null;
  }

  /**
   * The fencing token of the current holding (null when not held): larger than every token
   * issued before it for this key. Pass it to the resource you protect and have it refuse
   * lower ones.
   */
  get token(): number | null {
    return this.isAcquired ? this.holds[this.holds.length - 1].token : null;
  }

  /** The owner id this object holds under, as `RLOCK.INFO` shows it. */
  get identifier(): string {
    return this.owner;
  }

  protected currentSession(): Session {
    return Session.of(this.client, this.key);
  }

  /** Runs before each acquire (the semaphore sets its permits); undefined: nothing to wait for. */
  protected prepare(_session: Session): Promise<void> | undefined {
    return undefined;
  }

  /**
   * The acquire with request id `id` (and `WAIT ms NOTIFY clientId`): the words that are the
   * same on every acquire of `permits` made once (`acquireWords`), copied and appended to.
   */
  private acquireArgs(permits: number, id: string, wait?: { ms: number; clientId: number }): Arg[] {
    const words = this.acquireWords?.permits === permits ? this.acquireWords : this.makeAcquireWords(permits);
    const args = words.head.slice();
    if (wait) args.push('WAIT', wait.ms, 'NOTIFY', wait.clientId);
    if (this.watchdog) args.push('WATCHDOG');
    args.push('ID', id);
    for (const word of words.tail) args.push(word);
    return args;
  }

  /** `acquireTail`'s layout, what is the same on every call: `<family's words> PX lease`, and what follows `ID`. */
  private makeAcquireWords(permits: number): AcquireWords {
    const head = this.family.acquire(this.key, this.owner, permits);
    head.push('PX', String(this.lease));
    const maxHold = this.options.maxHold;
    const tail: Arg[] = maxHold === undefined ? [] : ['MAXHOLD', maxHold];
    tail.push(...this.acquireOptions());
    this.acquireWords = { permits, head, tail };
    return this.acquireWords;
  }

  /** Options of this family's acquire beyond the shared ones (the Mutex's `LOCKDELAY`). */
  protected acquireOptions(): Arg[] {
    return [];
  }

  /**
   * Takes `permits` (1 for locks): true when granted, false when not within the wait (or with
   * `orThrow`, redis-semaphore's `LockTimeoutError`).
   */
  protected take(permits: number, waiting: boolean, options: AcquireOptions = NO_OPTIONS): Promise<boolean> {
    return this.taking(permits, waiting, options, false) as Promise<boolean>;
  }

  /** Waits for `permits`; rejects with `LockTimeoutError` when not granted within the wait. */
  protected takeOrThrow(permits: number, options: AcquireOptions = NO_OPTIONS): Promise<void> {
    return this.taking(permits, true, options, true) as Promise<void>;
  }

  /** `take` and `takeOrThrow`: the quick acquire where it applies, else the whole one. */
  private taking(permits: number, waiting: boolean, options: AcquireOptions, orThrow: boolean): Promise<boolean | void> {
    let quick: Promise<boolean | void> | null;
    try {
      quick = this.quickTaking(permits, waiting, options, orThrow);
    } catch (err) {
      return Promise.reject(publicError(err));
    }
    return quick ?? this.takingAll(permits, waiting, options, orThrow);
  }

  /**
   * The uncontended acquire read in one `then` on its reply (issue 46): on an open command
   * connection (and subscriber, for a wait), with no signal, nothing to prepare or adopt and
   * no replica to confirm it (`callRead`), a grant in the reply is recorded there, with no `async` frame around the call. The
   * waiter is registered before the call goes out, as always (a grant by message may overtake
   * the reply). Whatever else the reply or its failure says (queued, a retry, a redirection)
   * goes on in `takingAll` from the call already sent: the same request id, the same waiter.
   * Null where it does not apply.
   */
  private quickTaking(permits: number, waiting: boolean, options: AcquireOptions, orThrow: boolean): Promise<boolean | void> | null {
    if (this.lost || this.adoptPending || options.signal) return null;
    const session = this.currentSession();
    if (this.prepare(session)) return null;
    const waitMs = waiting ? (options.acquireTimeout ?? this.options.acquireTimeout) : 0;
    let sub: Subscriber | null = null;
    let waiter: Waiter | null = null;
    let wait: { ms: number; clientId: number } | undefined;
    if (waitMs === undefined || waitMs > 0) {
      sub = session.subscribed;
      if (!sub) return null;
      const deadline = waitMs === undefined ? Infinity : Date.now() + waitMs;
      waiter = session.dispatcher.add(this.target, sub.generation, deadline, this.releaseOf(permits));
      wait = { ms: waitMs === undefined ? 0 : Math.max(1, waitMs), clientId: sub.clientId };
    }
    const id = requestId();
    const args = this.acquireArgs(permits, id, wait);
    const rest = (called: Promise<Called>) =>
      this.takingAll(permits, waiting, options, orThrow, { id, called, sub: sub ?? undefined, waiters: waiter ? [waiter] : undefined });
    return session.callRead(
      args,
      this.responseTimeout,
      this.confirm,
      // A wait names this Session's subscriber: not sent elsewhere by the call itself.
      waiter ? NOT_FOLLOWED : DIRECT,
      (reply, generation) => {
        if (typeof reply === 'number') {
          if (waiter) session.dispatcher.remove(waiter);
          this.adopt(session, permits, reply, false);
          return orThrow ? undefined : true;
        }
        if (reply === null && !waiter) {
          if (orThrow) throw this.timedOut(options);
          return false;
        }
        return rest(Promise.resolve({ reply, generation, retried: false, unconfirmed: undefined, session }));
      },
      rest,
    );
  }

  /** What gives back `permits` (a grant nobody claims), made once per count. */
  private releaseOf(permits: number): Arg[] {
    if (this.releaseArgs?.permits !== permits) this.releaseArgs = { permits, args: this.family.release(this.key, this.owner, permits) };
    return this.releaseArgs.args;
  }

  /** The whole acquire; `first`: its first attempt, sent already by `quickTaking`. */
  private async takingAll(
    permits: number,
    waiting: boolean,
    options: AcquireOptions,
    orThrow: boolean,
    first?: SentFirst,
  ): Promise<boolean | void> {
    if (this.lost) this.forget();
    const session = this.currentSession();
    if (this.adoptPending) {
      const adopted = await this.adoptExternal(session, options.signal);
      if (!orThrow) return adopted;
      if (!adopted) throw this.timedOut(options);
      return;
    }
    let granted: Granted | null;
    try {
      const prepared = this.prepare(session);
      if (prepared) await prepared;
      granted = await acquire(
        session,
        {
          args: (id, wait) => this.acquireArgs(permits, id, wait),
          targets: [this.target],
          waitMs: waiting ? (options.acquireTimeout ?? this.options.acquireTimeout) : 0,
          signal: options.signal,
          cancel: ['RLOCK.CANCEL', this.key, this.owner],
          release: this.family.release(this.key, this.owner, permits),
          timeout: this.responseTimeout,
          confirm: this.confirm,
        },
        first,
      );
    } catch (err) {
      throw publicError(err);
    }
    if (!granted) {
      if (orThrow) throw this.timedOut(options);
      return false;
    }
    const adopted = this.adopt(granted.session, permits, granted.tokens[0], granted.confirm, granted.unconfirmed);
    if (adopted) await adopted;
    return orThrow ? undefined : true;
  }

  /**
   * Records a grant of `permits` with `token` (taken here, or by a `MultiLock` for this key):
   * registered for re-binding and loss reports, confirmed by RENEW when `confirm` (told by
   * message, or retried: watchdog or lease, with or without replicas, as its lease may have
   * ended before the message was read), the lease refreshed. Internal.
   */
  adopt(session: Session, permits: number, token: number, confirm: boolean, unconfirmed?: Unconfirmed): Promise<void> | void {
    this.holds.push({ permits, token });
    this.session = session;
    session.register(this);
    if (confirm || unconfirmed) return this.adoptConfirmed(session, permits, confirm, unconfirmed);
    // Granted in the call's reply and nothing left to confirm (the uncontended case): no await.
    this.startRefresh();
  }

  /** The rest of `adopt` when the grant is to be confirmed, or was not. */
  private async adoptConfirmed(session: Session, permits: number, confirm: boolean, unconfirmed?: Unconfirmed): Promise<void> {
    // A grant by message (or a retried call's) was written by another connection: a RENEW of
    // our own, pipelined with WAIT, is what the replicas can confirm (and binds the watchdog
    // here). Sent for every one: a lease grant read after its lease ended answers 0 (C4.2).
    if (confirm) {
      let still: unknown;
      const renew: Arg[] = [this.family.renew, this.key, this.owner, 'PX', this.lease, ...(this.watchdog ? ['WATCHDOG'] : [])];
      try {
        [still, unconfirmed] = await session.confirmed(renew, this.confirm, this.responseTimeout);
      } catch (err) {
        // on a broken connection the new one re-binds every registered holding
        if (this.confirm && !(err instanceof ServerReply)) {
          await this.undo(session, permits);
          throw publicError(err);
        }
        still = 1;
      }
      if (Number(still) !== 1) {
        this.holds.pop();
        const err = new LockLostError(`the ${this.family.noun} "${this.key}" ended before its grant was confirmed`);
        this.markLost(err.message);
        if (!this.holds.length) this.forget();
        throw err;
      }
    }
    if (unconfirmed && unconfirmed.onFailure === 'raise') await this.undo(session, permits);
    settleUnconfirmed(unconfirmed, `acquire ${this.family.noun} "${this.key}"`, false);
    this.startRefresh();
  }

  /** Gives back the hold just recorded (its acquisition was not confirmed). */
  private async undo(session: Session, permits: number): Promise<void> {
    this.holds.pop();
    try {
      await session.call([...this.family.release(this.key, this.owner, permits), 'ID', requestId()], this.responseTimeout);
    } catch {
      // the primary is out of reach: the lease (or the watchdog's connection) ends it
    }
    if (!this.holds.length) this.forget();
  }

  /**
   * `acquiredExternally`: the holding our owner id has (taken by another object or process) is
   * renewed with our lease and becomes this object's, as it stands: not re-entered.
   */
  private async adoptExternal(session: Session, signal?: AbortSignal): Promise<boolean> {
    signal?.throwIfAborted();
    const renew: Arg[] = [this.family.renew, this.key, this.owner, 'PX', this.lease, ...(this.watchdog ? ['WATCHDOG'] : [])];
    let hold: Hold | null = null;
    try {
      const [still] = await session.confirmed(renew, null, this.responseTimeout);
      if (Number(still) === 1)
        hold = this.family.heldBy!(await session.call([this.family.info!, this.key], this.responseTimeout), this.owner);
    } catch (err) {
      throw publicError(err);
    }
    if (!hold) return false;
    this.adoptPending = false;
    await this.adopt(session, hold.permits, hold.token, false);
    return true;
  }

  private timedOut(options: AcquireOptions): LockTimeoutError {
    const waited = options.acquireTimeout ?? this.options.acquireTimeout ?? 0;
    // redis-semaphore's message, which its users match on
    return new LockTimeoutError(`Acquire ${this.family.noun} ${this.key} timeout (waited ${waited} ms)`);
  }

  /**
   * Gives back the last hold (its permits). A holding that was lost meanwhile resolves, as
   * redis-semaphore's `release()` does: the loss is told by `onLockLost` (or a warning).
   */
  protected give(): Promise<void> {
    const hold = this.holds[this.holds.length - 1];
    if (!hold) return Promise.reject(new NotOwnedError(`the ${this.family.noun} "${this.key}" is not held by this object`));
    if (this.lost) {
      this.forget();
      return Promise.resolve();
    }
    const session = this.session ?? this.currentSession();
    const args = this.family.release(this.key, this.owner, hold.permits);
    args.push('ID', requestId());
    // Read in the `then` on the reply where the call allows (no `async` frame, no record of the call).
    return session.callRead(
      args,
      this.responseTimeout,
      this.confirm,
      DIRECT,
      (reply) => this.gave(hold, reply, undefined),
      (called) =>
        called.then(
          (c) => this.gave(hold, c.reply, c.unconfirmed),
          (err) => {
            throw publicError(err);
          },
        ),
    );
  }

  /** The release of `hold` was answered `reply` (and confirmed by too few replicas: `unconfirmed`). */
  private gave(hold: Hold, reply: unknown, unconfirmed: Unconfirmed | undefined): void {
    const toldAlready = this.lost !== null; // the server's lost message came while the release was under way
    try {
      this.released(hold, reply);
    } catch (err) {
      if (!(err instanceof LockLostError)) throw err;
      if (!toldAlready) this.tell(err);
    }
    if (unconfirmed) settleUnconfirmed(unconfirmed, `release ${this.family.noun} "${this.key}"`, true);
  }

  /**
   * `hold` (the last one when undefined) was given back, here or by a `MultiLock`: `reply` is
   * the server's remaining count, or nil when the lock was no longer ours (`LockLostError`).
   * Internal.
   */
  released(hold: Hold | undefined, reply: unknown): void {
    const index = this.holds.lastIndexOf(hold ?? this.holds[this.holds.length - 1]);
    if (index >= 0) this.holds.splice(index, 1);
    if (reply === null || reply === undefined) {
      const err = new LockLostError(`the ${this.family.noun} "${this.key}" was no longer held by this object`);
      this.markLost(err.message);
      this.forget();
      throw err;
    }
    if (!this.holds.length) this.forget();
  }

  /**
   * `RLOCK.GUARD key owner token command ...`: runs `inner` (one write command) only while
   * this object holds the lock with its current token. Its reply is the inner command's.
   * Not sent again after a broken connection (the write may have run): `ConnectionError`.
   */
  protected async runGuarded(inner: Arg[]): Promise<unknown> {
    if (this.lost) throw this.lost;
    const token = this.token;
    if (token === null) throw new NotOwnedError(`the ${this.family.noun} "${this.key}" is not held by this object`);
    const session = this.session ?? this.currentSession();
    let reply: unknown;
    let unconfirmed: Unconfirmed | undefined;
    try {
      [reply, unconfirmed] = await session.confirmed(
        ['RLOCK.GUARD', this.key, this.owner, token, ...inner],
        this.confirm,
        this.responseTimeout,
        false,
      );
    } catch (err) {
      if (err instanceof ServerReply && err.message.startsWith('NOTOWNER')) {
        this.markLost(`a guarded ${String(inner[0])} was refused (${err.message})`);
        throw this.lost ?? new LockLostError(err.message);
      }
      if (err instanceof ConnectionFailure) {
        throw new ConnectionError(
          `the connection failed before the reply to a guarded ${String(inner[0])}: it may or may not have run (${err.message})`,
          err,
        );
      }
      throw publicError(err);
    }
    settleUnconfirmed(unconfirmed, `guarded ${String(inner[0])} under ${this.family.noun} "${this.key}"`, true);
    return reply;
  }

  /** Stops tracking: no holds, no timers; left registered, idle (`Session.register`). */
  private forget(): void {
    this.holds.length = 0;
    this.lost = null;
    this.stopRefresh();
    this.session = null;
  }

  private startRefresh(): void {
    if (this.refreshTimer || this.watchdog || this.refreshInterval <= 0) return;
    let lastRenewed = Date.now();
    const tick = async () => {
      this.refreshTimer = null;
      if (!this.isAcquired || !this.session) return;
      try {
        const [still, unconfirmed] = await this.session.confirmed(
          [this.family.renew, this.key, this.owner, 'PX', this.lease],
          this.confirm,
          this.responseTimeout,
        );
        if (unconfirmed) settleUnconfirmed({ ...unconfirmed, onFailure: 'warn' }, `renew ${this.family.noun} "${this.key}"`, true);
        if (Number(still) !== 1) {
          this.markLost(`the lease of the ${this.family.noun} "${this.key}" ended before it was renewed`);
          return;
        }
        lastRenewed = Date.now();
      } catch {
        if (Date.now() - lastRenewed >= this.lease) {
          this.markLost(`the lease of the ${this.family.noun} "${this.key}" could not be renewed in time`);
          return;
        }
      }
      if (this.isAcquired) this.refreshTimer = setTimeout(tick, this.refreshInterval).unref();
    };
    this.refreshTimer = setTimeout(tick, this.refreshInterval).unref();
  }

  /**
   * Stops renewing the lease (redis-semaphore's `stopRefresh`): with `lockTimeout`, the
   * holding ends when its lease does. A watchdog holding is not affected.
   */
  stopRefresh(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
  }

  // ---- Holding (for the session) ----

  rebindArgs(): Arg[] | null {
    if (!this.watchdog || !this.isAcquired) return null;
    return [this.family.renew, this.key, this.owner, 'PX', this.lease, 'WATCHDOG'];
  }

  movedTo(session: Session): void {
    this.session = session;
  }

  idle(): boolean {
    return this.holds.length === 0;
  }

  hasToken(token: number): boolean {
    return this.holds.some((hold) => hold.token === token);
  }

  markLost(reason: string): void {
    if (!this.holds.length || this.lost) return;
    const err = new LockLostError(`${this.family.noun} "${this.key}" lost: ${reason}`);
    this.lost = err;
    this.stopRefresh();
    this.session?.unregister(this);
    for (const controller of this.signals) controller.abort(err);
    this.tell(err);
  }

  /** Tells the user of a loss: `onLockLost`, else (and unless a `using()` signal did) a process warning. */
  private tell(err: LockLostError): void {
    const onLockLost = this.options.onLockLost;
    if (!onLockLost) {
      // release() no longer rejects for a loss: without a callback, say it here
      if (!this.signals.size) process.emitWarning(err);
    } else {
      try {
        const result: unknown = onLockLost.call(this, err);
        if (result instanceof Promise) result.catch((e) => warn(e));
      } catch (e) {
        warn(e);
      }
    }
  }

  // ---- using ----

  protected async runHeld<T>(acquire: () => Promise<void>, fn: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
    await acquire();
    const controller = new AbortController();
    this.signals.add(controller);
    if (this.lost) controller.abort(this.lost);
    let result: T;
    try {
      result = await fn(controller.signal);
    } catch (err) {
      this.signals.delete(controller);
      await this.give().catch(() => {});
      throw err;
    }
    this.signals.delete(controller);
    await this.give(); // after a loss it resolves: fn was told through the signal
    return result;
  }
}

/** redis-semaphore's checks and messages. */
function checkClientAndKey(client: unknown, key: unknown): void {
  if (!client) throw new TypeError('rlock: "client" is required');
  if (key === '' || key === undefined || key === null) throw new TypeError('rlock: "key" is required');
  if (typeof key !== 'string') throw new TypeError('rlock: "key" must be a string');
}

function warn(err: unknown): void {
  process.emitWarning(`rlock: onLockLost threw: ${(err as Error)?.stack ?? err}`);
}
