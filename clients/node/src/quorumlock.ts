/**
 * redis-semaphore's `RedlockMutex`, `RedlockSemaphore` and `RedlockMultiSemaphore`: the
 * Redlock algorithm over independent servers, each holding through an ordinary rlock object
 * (a `Mutex`, `Semaphore` or `MultiSemaphore` per server, all under one identifier). An
 * attempt asks every server at once (one try each); it succeeds when a majority granted within
 * the lease less the clock drift, and otherwise gives back what was granted and tries again
 * after `retryInterval` (with jitter) until `acquireTimeout`. Held, each server's object keeps
 * its lease renewed (or its watchdog); the lock is lost when fewer than a majority still hold.
 */

import { LockLostError, LockTimeoutError } from './errors';
import { Holder } from './holder';
import { MultiSemaphore } from './multisemaphore';
import { Mutex } from './mutex';
import { AcquireArg, LockOptions, WATCHDOG_LEASE, acquireOptionsOf, checkAcquireTimeout, ownerOf } from './options';
import { quorumSize } from './quorum';
import { validUntil } from './redlock';
import { Semaphore } from './semaphore';

/** redis-semaphore's allowance for clock drift, a fraction of the lease. */
const DRIFT_FACTOR = 0.01;
/** redis-semaphore's default pause between attempts, ms. */
const DEFAULT_RETRY_INTERVAL = 10;
/** With the watchdog (no lease to refresh): how often a server that lost the lock is asked again, ms. */
const WATCHDOG_RETAKE_INTERVAL = 1000;

type PerServer = Holder & { tryAcquire(): Promise<boolean>; release(): Promise<void>; stopRefresh(): void };

abstract class QuorumLock {
  readonly identifier: string;
  private readonly servers: PerServer[];
  private acquired = false;
  /** Acquisitions by this object not yet released: acquiring again re-enters, as a `Mutex` does. */
  private holds = 0;
  private retakeTimer: NodeJS.Timeout | null = null;

  protected constructor(
    clients: unknown,
    readonly key: string,
    private readonly noun: string,
    private readonly options: LockOptions,
    create: (client: unknown, options: LockOptions) => PerServer,
  ) {
    if (!Array.isArray(clients) || !clients.length) throw new TypeError('rlock: "clients" array is required');
    this.identifier = ownerOf(options);
    checkAcquireTimeout(options.acquireTimeout);
    const adopts = Boolean(options.acquiredExternally || options.externallyAcquiredIdentifier);
    const perServer: LockOptions = {
      ...options,
      identifier: this.identifier,
      identifierSuffix: undefined,
      externallyAcquiredIdentifier: undefined,
      acquiredExternally: adopts ? true : undefined,
      onLockLost: (err) => this.serverLost(err),
    };
    this.servers = clients.map((client) => create(client, perServer));
  }

  get isAcquired(): boolean {
    return this.acquired;
  }

  private get quorum(): number {
    return quorumSize(this.servers.length);
  }

  /** Waits (polling, as Redlock does) up to `acquireTimeout`; rejects with `LockTimeoutError`. */
  async acquire(arg?: AcquireArg): Promise<void> {
    if (!(await this.attempts(arg))) {
      throw new LockTimeoutError(`Acquire ${this.noun} ${this.key} timeout (waited ${this.options.acquireTimeout ?? 0} ms)`);
    }
  }

  /** Tries up to `acquireTimeout`, as redis-semaphore's `tryAcquire`: false when not acquired. */
  tryAcquire(arg?: AcquireArg): Promise<boolean> {
    return this.attempts(arg);
  }

  private async attempts(arg: AcquireArg): Promise<boolean> {
    if (this.acquired) {
      this.holds++;
      return true;
    }
    const { signal, acquireTimeout = this.options.acquireTimeout } = acquireOptionsOf(arg) ?? {};
    const deadline = acquireTimeout === undefined ? Infinity : Date.now() + acquireTimeout;
    const pause = this.options.retryInterval ?? DEFAULT_RETRY_INTERVAL;
    for (;;) {
      signal?.throwIfAborted();
      if (await this.attempt()) return true;
      if (Date.now() >= deadline) return false;
      const wait = Math.min(deadline - Date.now(), Math.round(pause * (0.5 + Math.random())));
      await new Promise<void>((resolve) => setTimeout(resolve, wait));
    }
  }

  private async attempt(): Promise<boolean> {
    const start = Date.now();
    const granted = await Promise.all(this.servers.map((server) => server.tryAcquire().catch(() => false)));
    const votes = granted.filter(Boolean).length;
    const lease = this.options.lockTimeout ?? WATCHDOG_LEASE;
    if (votes >= this.quorum && validUntil(start, lease, DRIFT_FACTOR) > Date.now()) {
      this.acquired = true;
      this.holds = 1;
      this.startRetaking();
      return true;
    }
    await Promise.all(this.servers.map((server, i) => (granted[i] ? server.release().catch(() => {}) : null)));
    return false;
  }

  /** Gives back every server's holding; silent when the lock was lost meanwhile (as redis-semaphore). */
  async release(): Promise<void> {
    if (this.acquired && --this.holds > 0) return;
    this.acquired = false;
    this.stopRetaking();
    await Promise.all(this.servers.map((server) => (server.isAcquired ? server.release().catch(() => {}) : null)));
  }

  /** Stops renewing the leases: with `lockTimeout`, the lock ends when they do. */
  stopRefresh(): void {
    this.stopRetaking();
    for (const server of this.servers) server.stopRefresh();
  }

  /**
   * While held, a server that lost the lock (restarted, failed over, its lease ran out while
   * unreachable) is asked for it again at each refresh, as redis-semaphore's refresh does, so
   * that the lock survives the next server's failure too.
   */
  private startRetaking(): void {
    const interval =
      this.options.lockTimeout === undefined
        ? WATCHDOG_RETAKE_INTERVAL
        : (this.options.refreshInterval ?? Math.floor(this.options.lockTimeout * 0.8));
    if (this.retakeTimer || interval <= 0) return;
    const tick = async () => {
      const retaken = await Promise.all(this.servers.map((server) => (server.isAcquired ? false : server.tryAcquire().catch(() => false))));
      if (!this.acquired) {
        // released or lost while asking: what was just taken goes back
        await Promise.all(this.servers.map((server, i) => (retaken[i] ? server.release().catch(() => {}) : null)));
        return;
      }
      if (this.retakeTimer) this.retakeTimer = setTimeout(tick, interval).unref();
    };
    this.retakeTimer = setTimeout(tick, interval).unref();
  }

  private stopRetaking(): void {
    if (this.retakeTimer) clearTimeout(this.retakeTimer);
    this.retakeTimer = null;
  }

  private serverLost(err: LockLostError): void {
    if (!this.acquired) return;
    const holding = this.servers.filter((server) => server.isAcquired).length;
    if (holding >= this.quorum) return;
    this.acquired = false;
    this.stopRefresh();
    // what the servers still hold is of no use without a majority: give it back
    for (const server of this.servers) if (server.isAcquired) server.release().catch(() => {});
    const lost = new LockLostError(
      `${this.noun} "${this.key}" lost: ${holding} of ${this.servers.length} servers still hold it (${err.message})`,
    );
    const onLockLost = this.options.onLockLost;
    if (!onLockLost) {
      process.emitWarning(lost);
      return;
    }
    try {
      onLockLost.call(this, lost);
    } catch (e) {
      process.emitWarning(`rlock: onLockLost threw: ${(e as Error)?.stack ?? e}`);
    }
  }
}

/** A mutex over independent servers (redis-semaphore's `RedlockMutex`). */
export class RedlockMutex extends QuorumLock {
  constructor(clients: unknown[], key: string, options: LockOptions = {}) {
    super(clients, key, 'redlock-mutex', options, (client, o) => new Mutex(client, key, o));
  }
}

/** A semaphore of `limit` permits on each of independent servers (redis-semaphore's `RedlockSemaphore`). */
export class RedlockSemaphore extends QuorumLock {
  constructor(
    clients: unknown[],
    key: string,
    readonly limit: number,
    options: LockOptions = {},
  ) {
    super(clients, key, 'redlock-semaphore', options, (client, o) => new Semaphore(client, key, limit, o));
  }
}

/** `permits` at a time of `limit`, on each of independent servers (redis-semaphore's `RedlockMultiSemaphore`). */
export class RedlockMultiSemaphore extends QuorumLock {
  constructor(
    clients: unknown[],
    key: string,
    readonly limit: number,
    readonly permits: number,
    options: LockOptions = {},
  ) {
    super(clients, key, 'redlock-multi-semaphore', options, (client, o) => new MultiSemaphore(client, key, limit, permits, o));
  }
}
