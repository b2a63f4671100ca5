/**
 * The options of the lock objects, their owner id (one per object, or the `identifier` given)
 * and the `Family`: which commands a lock type sends (as the server's `src/families/`).
 */

import { randomUUID } from 'node:crypto';
import type { ConfirmSetting } from './confirm';
import { Arg } from './drivers/driver';
import { LockLostError } from './errors';

export interface LockOptions {
  /**
   * The lease in ms. Omitted: the server's watchdog holds the lock while this process's
   * connection lives (`PX 30000 WATCHDOG`), and ends it within ms of the process dying.
   * Given: a plain lease of that length, renewed every `refreshInterval` ms.
   */
  lockTimeout?: number;
  /** How long `acquire()` waits in the server's FIFO queue, in ms. Omitted: no limit. */
  acquireTimeout?: number;
  /** With `lockTimeout`: renew the lease this often (default 80% of it; 0: never). */
  refreshInterval?: number;
  /** Ends the holding at its grant time + `maxHold` ms however it is renewed (`MAXHOLD`). */
  maxHold?: number;
  /** Called once when a holding is lost (lease end, force release, a connection that could not re-bind). */
  onLockLost?: (this: any, err: LockLostError) => void;
  /** How long a reply may take (beyond a wait) before the call is sent again on a new connection. Default 2000 ms. */
  responseTimeout?: number;
  /** Accepted for redis-semaphore compatibility and ignored: rlock waits in the server, not by polling. */
  retryInterval?: number;
  /**
   * The owner id to hold under (default: a fresh `<uuid>:<thread id>` per object). Objects
   * given the same identifier are one owner: on one key they re-enter each other, and across
   * keys the server sees one thread of control, which is what its deadlock detection needs.
   */
  identifier?: string;
  /** Appended to the generated identifier: `<uuid>-<suffix>` (redis-semaphore's option). */
  identifierSuffix?: string;
  /**
   * With `identifier`: the lock is already held under that identifier (taken by another
   * object or process): the first `acquire()` adopts that holding (renews it and takes over
   * its refresh and release) instead of taking it again. redis-semaphore's option.
   */
  acquiredExternally?: true;
  /** redis-semaphore's older form of `{ identifier, acquiredExternally: true }`. */
  externallyAcquiredIdentifier?: string;
  /**
   * Confirmation by the replicas of every acquisition and release (`WAIT` pipelined after the
   * write): `'auto'` (default: the replicas connected now; none, nothing is sent), a count,
   * `'aof'`, `{ replicas, timeout, aof, onFailure }`, or `false`.
   */
  confirm?: ConfirmSetting;
}

export interface AcquireOptions {
  /** Aborting it leaves the server's queue (`RLOCK.CANCEL`) and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** This call's wait in ms, instead of the object's `acquireTimeout` (0: one attempt). */
  acquireTimeout?: number;
}

/** `acquire(signal)` (redis-semaphore's form) or `acquire({ signal, acquireTimeout })`. */
export type AcquireArg = AcquireOptions | AbortSignal | undefined;

export function acquireOptionsOf(arg: AcquireArg): AcquireOptions | undefined {
  const options = arg instanceof AbortSignal ? { signal: arg } : arg;
  checkAcquireTimeout(options?.acquireTimeout);
  return options;
}

/**
 * An `acquireTimeout`, where given, is a number of ms >= 0: anything else (NaN, a string) would
 * reach the server as `WAIT NaN` and be refused there, after the call was made.
 */
export function checkAcquireTimeout(ms: unknown): void {
  if (ms === undefined) return;
  if (typeof ms !== 'number') throw new TypeError('rlock: acquireTimeout must be a number of ms');
  if (!(ms >= 0)) throw new RangeError('rlock: acquireTimeout must be a number of ms >= 0');
}

/** The lease the watchdog keeps renewing (`PX`), in ms. */
export const WATCHDOG_LEASE = 30_000;

/** redis-semaphore's name for the lock options. */
export type TimeoutOptions = LockOptions;

/**
 * redis-semaphore exports its defaults (a 10 s lease, a 10 s acquire limit); rlock's defaults
 * are the absence of these options: the watchdog instead of a lease, and no acquire limit.
 * Spreading this object therefore changes nothing.
 */
export const defaultTimeoutOptions: Readonly<LockOptions> = Object.freeze({});

/**
 * The owner id of a lock object: `options.identifier` (or `externallyAcquiredIdentifier`), or
 * a fresh UUID (`<uuid>-<identifierSuffix>` with a suffix), unique per object. The messages
 * are redis-semaphore's.
 */
export function ownerOf(options: LockOptions = {}): string {
  const { identifier, acquiredExternally, externallyAcquiredIdentifier } = options;
  if (identifier !== undefined && (typeof identifier !== 'string' || !identifier)) {
    throw new TypeError('rlock: identifier must be not empty random string');
  }
  if (acquiredExternally && !identifier) throw new TypeError('rlock: acquiredExternally=true meanless without custom identifier');
  if (externallyAcquiredIdentifier !== undefined && (identifier || acquiredExternally)) {
    throw new TypeError('rlock: Invalid usage. Use custom identifier and acquiredExternally: true');
  }
  const id = identifier ?? externallyAcquiredIdentifier;
  if (id === undefined) {
    const suffix = options.identifierSuffix;
    return suffix ? `${randomUUID()}-${suffix}` : randomUUID();
  }
  if (typeof id !== 'string' || !id) throw new TypeError('rlock: identifier must be not empty random string');
  if (id.startsWith('rlock:')) throw new TypeError("rlock: identifiers starting with 'rlock:' are reserved by the server");
  return id;
}

/** Whether the first acquire adopts a holding taken elsewhere under the same identifier. */
export function adoptsExternally(options: LockOptions = {}): boolean {
  return Boolean(options.acquiredExternally || options.externallyAcquiredIdentifier);
}

export interface Hold {
  permits: number;
  token: number;
}

export interface Family {
  /** Message type: lock, read, write, permits. */
  type: 'lock' | 'read' | 'write' | 'permits';
  /** What the user sees in messages: "mutex", "semaphore" ... */
  noun: string;
  acquire(key: string, owner: string, permits: number): Arg[];
  release(key: string, owner: string, permits: number): Arg[];
  renew: string;
  /** The command that describes a key (`RLOCK.INFO`), and what its reply says `owner` holds. */
  info?: string;
  heldBy?(info: unknown, owner: string): Hold | null;
}
