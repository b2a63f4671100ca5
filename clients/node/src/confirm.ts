/**
 * Confirm: confirmation by the replicas (docs/availability.md). A write rlock makes is
 * pipelined with `WAIT n timeout` (or `WAITAOF 1 n timeout`) on the same connection, so a
 * failover right after an acquisition cannot hand the lock to a second holder unnoticed.
 *
 * Redis sets a connection's replication offset after each of its commands, so the WAIT after
 * a command counts the replicas that have that command's write. A grant told by message was
 * written by another connection: it is confirmed by a `RENEW` (which itself writes) pipelined
 * with WAIT instead (Redis 8.2 and Valkey count a WAIT only from the connection's last write).
 */

import { Arg } from './drivers/driver';
import { RLockError } from './errors';

/** How rlock's writes are confirmed by the replicas. */
export interface ConfirmOptions {
  /** `'auto'` (default): the replicas connected to the primary now (ROLE, read at most once a second; none: no WAIT). Or a count. */
  replicas?: 'auto' | number;
  /** How long to wait for them, in ms (default 1000, as Redisson's `slavesSyncTimeout`). */
  timeout?: number;
  /** `WAITAOF 1 n timeout`: fsynced by the primary's AOF and n replicas' (Redis >= 7.2, Valkey >= 8.0). */
  aof?: boolean;
  /** `'raise'` (default): `NotConfirmedError` (an acquisition is given back first); `'warn'`: a process warning, and go on. */
  onFailure?: 'raise' | 'warn';
}

/**
 * The `confirm` option: `'auto'` (the default), `'aof'`, a replica count, `false`/`'off'`/`0`
 * (no confirmation: replication stays asynchronous), or `ConfirmOptions`.
 */
export type ConfirmSetting = 'auto' | 'aof' | 'off' | boolean | number | ConfirmOptions;

export interface Confirm {
  replicas: 'auto' | number;
  timeout: number;
  aof: boolean;
  onFailure: 'raise' | 'warn';
}

export const DEFAULT_CONFIRM_TIMEOUT = 1000;
/** How long a node's replica count (ROLE) is trusted before it is read again. */
const REPLICAS_TTL_MS = 1000;

/** The `confirm` option as a Confirm, or null for none. */
export function resolveConfirm(setting: ConfirmSetting | undefined): Confirm | null {
  const base: Confirm = { replicas: 'auto', timeout: DEFAULT_CONFIRM_TIMEOUT, aof: false, onFailure: 'raise' };
  if (setting === undefined || setting === true || setting === 'auto') return base;
  if (setting === false || setting === 'off' || setting === 0) return null;
  if (setting === 'aof') return { ...base, aof: true };
  if (typeof setting === 'number') {
    if (!Number.isInteger(setting) || setting < 0) throw new RangeError('rlock: confirm takes a replica count >= 0');
    return { ...base, replicas: setting };
  }
  if (typeof setting !== 'object' || setting === null) {
    throw new TypeError(
      `rlock: confirm takes 'auto', 'aof', 'off', false, a replica count or { replicas, timeout, aof, onFailure }, not ${String(setting)}`,
    );
  }
  const confirm = { ...base, ...setting } as Confirm;
  if (confirm.replicas !== 'auto' && !(Number.isInteger(confirm.replicas) && confirm.replicas >= 0)) {
    throw new RangeError("rlock: confirm.replicas is 'auto' or a count >= 0");
  }
  if (!(Number.isInteger(confirm.timeout) && confirm.timeout >= 1))
    throw new RangeError('rlock: confirm.timeout is a whole number of ms >= 1');
  if (confirm.onFailure !== 'raise' && confirm.onFailure !== 'warn') throw new RangeError("rlock: confirm.onFailure is 'raise' or 'warn'");
  if (confirm.replicas === 0 && !confirm.aof) return null;
  return confirm;
}

/**
 * Fewer replicas than required acknowledged a write within the confirmation timeout. An
 * acquisition was given back first and is not held; a release, count-down or guarded write
 * stands on the primary but may be lost if it fails over now.
 */
export class NotConfirmedError extends RLockError {
  constructor(
    message: string,
    readonly confirmed: number,
    readonly required: number,
    readonly timeoutMs: number,
  ) {
    super('ERR_RLOCK_NOT_CONFIRMED', message);
  }
}

/** A write that was carried out but acknowledged by too few replicas. */
export interface Unconfirmed {
  confirmed: number;
  required: number;
  timeoutMs: number;
  onFailure: 'raise' | 'warn';
}

/** One node's replica count (ROLE, at most once a second, again after a reconnect) and whether it has WAITAOF. */
export class Replicas {
  private count: number | null = null;
  private readAt = 0;
  private hasWaitaof: boolean | null = null;

  invalidate(): void {
    this.count = null;
  }

  /**
   * True when `words` would say there is nothing to wait for, without a call: 'auto' with no
   * replica counted less than a second ago (the common single-server case skips an async step).
   */
  noneNeeded(confirm: Confirm): boolean {
    return confirm.replicas === 'auto' && !confirm.aof && this.count === 0 && Date.now() - this.readAt <= REPLICAS_TTL_MS;
  }

  /** The WAIT (WAITAOF) to pipeline after a write and how many replicas it needs; null: nothing to wait for. */
  async words(confirm: Confirm, call: (args: Arg[]) => Promise<unknown>): Promise<{ words: Arg[]; required: number } | null> {
    let wanted = confirm.replicas;
    if (wanted === 'auto') {
      if (this.count === null || Date.now() - this.readAt > REPLICAS_TTL_MS) {
        this.count = await readReplicas(call);
        this.readAt = Date.now();
      }
      wanted = this.count;
    }
    if (confirm.aof) {
      if (this.hasWaitaof === null) {
        const reply = await call(['COMMAND', 'INFO', 'WAITAOF']).catch(() => null);
        this.hasWaitaof = Array.isArray(reply) && reply[0] != null;
      }
      if (!this.hasWaitaof) {
        throw new RLockError(
          'ERR_RLOCK_CONFIG',
          "rlock: confirm 'aof' needs WAITAOF, which this server lacks (Redis >= 7.2, Valkey >= 8.0): confirm by the replicas only, or upgrade",
        );
      }
      return { words: ['WAITAOF', 1, wanted, confirm.timeout], required: wanted };
    }
    if (wanted <= 0) return null;
    return { words: ['WAIT', wanted, confirm.timeout], required: wanted };
  }
}

/** The replicas connected to the primary: ROLE, or INFO replication when ROLE is refused. */
async function readReplicas(call: (args: Arg[]) => Promise<unknown>): Promise<number> {
  try {
    const role = (await call(['ROLE'])) as unknown[];
    if (Array.isArray(role) && String(role[0]).toLowerCase() === 'master') return Array.isArray(role[2]) ? role[2].length : 0;
    return 0;
  } catch {
    try {
      const text = String(await call(['INFO', 'replication']));
      const line = text.split(/\r?\n/).find((l) => l.startsWith('connected_slaves:'));
      return line ? Number(line.split(':')[1]) : 0;
    } catch (err) {
      process.emitWarning(`rlock: cannot read the replica count (${(err as Error).message}): writes are not confirmed`);
      return 0;
    }
  }
}

/** How many replicas acknowledged: WAIT's integer, WAITAOF's [local, replicas] (-1: not even the local AOF). */
export function confirmedCount(words: Arg[], reply: unknown): number {
  if (words[0] === 'WAITAOF') {
    const [local, replicas] = (reply as unknown[]).map(Number);
    return local >= 1 ? replicas : -1;
  }
  return Number(reply);
}

/**
 * Raises (or warns about) a write that was not confirmed: `what` names it ("release mutex
 * \"k\""); `stands` adds that the write stays on the primary.
 */
export function settleUnconfirmed(unconfirmed: Unconfirmed | undefined, what: string, stands: boolean): void {
  if (!unconfirmed) return;
  const { confirmed, required, timeoutMs } = unconfirmed;
  const text = `${what}: confirmed by ${Math.max(confirmed, 0)} of ${required} replicas within ${timeoutMs} ms`;
  if (unconfirmed.onFailure === 'warn') {
    process.emitWarning(
      `rlock: ${text} (${stands ? 'it stands on the primary' : 'held all the same'}, but may be lost if the primary fails over now)`,
    );
    return;
  }
  const why = stands ? 'it stands on the primary, which may fail over without it' : 'given back: not held';
  throw new NotConfirmedError(`${text} (${why})`, Math.max(confirmed, 0), required, timeoutMs);
}
