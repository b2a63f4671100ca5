/**
 * The connections rlock keeps for one user client, shared by every lock object made on it:
 *
 * - the command connection: every acquire, release, renew and cancel goes here, and every
 *   watchdog holding is bound to it. It is `PING`ed every third of `rlock.watchdog-idle-ms`
 *   while it carries a watchdog holding; when it drops, a new one is opened at once and each
 *   holding is re-bound with `RENEW ... PX lease WATCHDOG` (0 = lost). A call that fails on a
 *   broken connection is sent once more, unchanged (same `ID`), on the new one.
 * - the subscriber: subscribed to its own `__rlock__` channel; every waiting call names it
 *   (`WAIT ms NOTIFY <its client id>`), so any number of waits hold no connection each and
 *   no connection is ever blocked. Its messages settle the waits and report lost holdings.
 */

import { randomUUID } from 'node:crypto';
import { Arg, Connection, Driver } from './drivers/driver';
import { IoRedisDriver, isIoRedis } from './drivers/ioredis';
import { NodeRedisDriver, isNodeRedis } from './drivers/node-redis';
import { ConnectionError, ConnectionFailure, ServerReply } from './errors';
import { parseMessage } from './message';
import { field, plain } from './reply';

export const DEFAULT_RESPONSE_TIMEOUT = 2000;
/** The server's default `rlock.watchdog-idle-ms`, used when `CONFIG GET` is refused. */
const DEFAULT_IDLE_MS = 30_000;
export const RECONNECT_PAUSE_MS = 100;

/** A fresh id for one logical call, re-sent unchanged by its retry. */
export function requestId(): string {
  return randomUUID().replace(/-/g, '');
}

/** What the dispatcher and the re-binding know of a holding (implemented by the lock objects). */
export interface Holding {
  /** `<type>\0<key>\0<owner>`, as messages name it. */
  readonly target: string;
  /** The lease to re-bind with, in ms. */
  readonly lease: number;
  /** `RENEW key owner PX lease WATCHDOG` while it holds with the watchdog, else null. */
  rebindArgs(): Arg[] | null;
  hasToken(token: number): boolean;
  markLost(reason: string): void;
}

export function targetOf(type: string, key: string, owner: string): string {
  return `${type}\0${key}\0${owner}`;
}

function splitTarget(target: string): [string, string, string] {
  const first = target.indexOf('\0');
  const second = target.indexOf('\0', first + 1);
  return [target.slice(0, first), target.slice(first + 1, second), target.slice(second + 1)];
}

/** The outcomes of an all-or-none wait's keys: the first that is not a grant, else a grant once all are. */
function allGranted(outcomes: Promise<Outcome>[]): Promise<Outcome> {
  return new Promise((resolve) => {
    let left = outcomes.length;
    for (const outcome of outcomes) {
      void outcome.then((told) => {
        if (told.kind !== 'granted' || --left === 0) resolve(told);
      });
    }
  });
}

type Outcome =
  | { kind: 'granted'; value: string }
  | { kind: 'timeout' }
  | { kind: 'failed'; value: string }
  | { kind: 'disconnected' }
  | { kind: 'resend' }
  | { kind: 'closed' }
  | { kind: 'deadline' }
  | { kind: 'abort' };

interface Waiter {
  target: string;
  generation: number;
  /** When the server's `WAIT` ends (for routing `timeout` messages), ms since the epoch. */
  deadline: number;
  /** Given up locally: kept only to absorb its message (a grant is given back). */
  ghost: boolean;
  /** What gives back a grant that nobody claims (without `ID`). */
  release: Arg[] | null;
  settle(outcome: Outcome): void;
  /** The message's outcome, set the moment it is dispatched. */
  told?: Outcome;
}

export interface WaitSpec {
  target: string;
  /**
   * The targets of the other keys of an all-or-none wait (`RLOCK.ACQUIREALL`), told by one
   * message each, in the same turn as `target`'s: granted only when every one is.
   */
  more?: string[];
  /** The full command for the subscriber `clientId`, with `WAIT waitMs NOTIFY clientId`. */
  build(clientId: number, waitMs: number): Arg[];
  /** Undefined: no time limit. */
  waitMs: number | undefined;
  signal?: AbortSignal;
  /** `RLOCK.CANCEL key owner`, or null where it cannot reach the wait (latch). */
  cancel: Arg[] | null;
  release: Arg[] | null;
  timeout: number;
}

export interface Called {
  reply: unknown;
  generation: number;
  /** Sent a second time on a new connection. */
  retried: boolean;
}

export interface Waited {
  token: number;
  /** With `WaitSpec.more`: the token of each target, `target`'s first. */
  tokens: number[];
  /** Granted by message after queueing (a watchdog grant is then bound to the subscriber). */
  queued: boolean;
  retried: boolean;
}

interface Subscriber {
  conn: Connection;
  clientId: number;
  generation: number;
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string, onTimeout?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onTimeout?.();
      reject(new ConnectionFailure(`no reply to ${what} within ${ms} ms`));
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export function driverFor(client: unknown): Driver {
  if ((client as any)?.isCluster) {
    throw new TypeError('rlock: an ioredis Cluster is not supported; pass a client of one node');
  }
  if (isIoRedis(client)) return new IoRedisDriver(client);
  if (isNodeRedis(client)) return new NodeRedisDriver(client);
  throw new TypeError('rlock: expected an ioredis instance or a node-redis (v5) client');
}

export class Hub {
  private static readonly hubs = new WeakMap<object, Hub>();

  /** The hub of `client` (made at first use; a new one after the client was closed). */
  static of(client: unknown): Hub {
    const existing = Hub.hubs.get(client as object);
    if (existing && !existing.closed) return existing;
    const driver = driverFor(client);
    const hub = new Hub(driver);
    Hub.hubs.set(client as object, hub);
    driver.onClientEnd(() => hub.close());
    return hub;
  }

  /** Closes the connections rlock opened for `client` (its holdings end). */
  static close(client: unknown): void {
    Hub.hubs.get(client as object)?.close();
  }

  closed = false;
  private conn: Connection | null = null;
  private opening: Promise<[Connection, number]> | null = null;
  private generation = 0;
  private lastContact = Date.now();
  private recovering = false;
  private readonly holdings = new Set<Holding>();
  private pingTimer: NodeJS.Timeout | null = null;
  private pingEvery: number | null = null;

  private sub: Subscriber | null = null;
  private subOpening: Promise<Subscriber> | null = null;
  private subGeneration = 0;
  private readonly waiters = new Map<string, Waiter[]>();
  /** Closed with the hub: the observers, each with a connection of its own. */
  private readonly dependents = new Set<{ close(): void }>();

  constructor(readonly driver: Driver, private readonly responseTimeout = DEFAULT_RESPONSE_TIMEOUT) {}

  // ---- the command connection ----

  private current(): Promise<[Connection, number]> {
    if (this.closed) return Promise.reject(new ConnectionError('rlock: the client was closed'));
    if (this.conn) return Promise.resolve([this.conn, this.generation]);
    if (!this.opening) {
      this.opening = this.openCommand().finally(() => {
        this.opening = null;
      });
    }
    return this.opening;
  }

  private async openCommand(): Promise<[Connection, number]> {
    const conn = await withTimeout(this.driver.open(), this.responseTimeout * 2, 'connect');
    if (this.closed) {
      conn.close();
      throw new ConnectionError('rlock: the client was closed');
    }
    const generation = ++this.generation;
    // A new connection re-binds the watchdog holdings before anything else is sent on it.
    const rebinds = [...this.holdings].flatMap((holding) => {
      const args = holding.rebindArgs();
      return args ? [{ holding, args }] : [];
    });
    try {
      await Promise.all(
        rebinds.map(async ({ holding, args }) => {
          try {
            const still = await withTimeout(conn.send(args), this.responseTimeout, 'RENEW', () => conn.close());
            if (Number(still) !== 1) holding.markLost('the lock ended while its connection was down');
          } catch (err) {
            if (!(err instanceof ServerReply)) throw err;
            holding.markLost(`re-binding failed: ${err.message}`);
          }
        }),
      );
    } catch (err) {
      conn.close();
      throw err;
    }
    this.conn = conn;
    this.lastContact = Date.now();
    conn.onDown(() => this.commandDown(conn));
    return [conn, generation];
  }

  private commandDown(conn: Connection): void {
    if (this.conn !== conn) return;
    this.conn = null;
    if (!this.closed && this.bound().length) void this.recover();
  }

  private bound(): Holding[] {
    return [...this.holdings].filter((holding) => holding.rebindArgs() !== null);
  }

  /** Reconnects (and so re-binds) at once; a holding whose server stayed silent a whole lease is lost. */
  private async recover(): Promise<void> {
    if (this.recovering) return;
    this.recovering = true;
    try {
      while (!this.closed && this.bound().length) {
        try {
          await this.current();
          return;
        } catch {
          const silent = Date.now() - this.lastContact;
          for (const holding of this.bound()) {
            if (silent >= holding.lease) holding.markLost('the server could not be reached for a whole lease');
          }
          await sleep(RECONNECT_PAUSE_MS);
        }
      }
    } finally {
      this.recovering = false;
    }
  }

  private sendOn(conn: Connection, args: Arg[], timeout: number): Promise<unknown> {
    return withTimeout(conn.send(args), timeout, String(args[0]), () => conn.close()).then((reply) => {
      if (conn === this.conn) this.lastContact = Date.now();
      return plain(reply);
    });
  }

  /**
   * One logical call with the retry rule; rejects with `ServerReply` or `ConnectionFailure`.
   * `retry` false: a call that is not safe to send twice (it has no `ID`) is not sent again.
   */
  async callEx(args: Arg[], timeout = this.responseTimeout, retry = true): Promise<Called> {
    let [conn, generation] = await this.current();
    try {
      return { reply: await this.sendOn(conn, args, timeout), generation, retried: false };
    } catch (err) {
      if (!(err instanceof ConnectionFailure)) throw err;
      if (this.conn === conn) conn.close();
      if (!retry) throw err;
      [conn, generation] = await this.current();
      return { reply: await this.sendOn(conn, args, timeout), generation, retried: true };
    }
  }

  async call(args: Arg[], timeout = this.responseTimeout, retry = true): Promise<unknown> {
    return (await this.callEx(args, timeout, retry)).reply;
  }

  /** Re-bound after a reconnect, reported lost by messages; watchdog ones keep the connection alive. */
  register(holding: Holding): void {
    this.holdings.add(holding);
    this.schedulePing();
  }

  unregister(holding: Holding): void {
    this.holdings.delete(holding);
  }

  private schedulePing(): void {
    if (this.pingTimer || this.closed || !this.bound().length) return;
    const every = this.pingEvery ?? 1000;
    this.pingTimer = setTimeout(() => void this.keepAlive(), every);
    this.pingTimer.unref();
  }

  private async keepAlive(): Promise<void> {
    this.pingTimer = null;
    if (this.closed || !this.bound().length) return;
    if (this.pingEvery === null) {
      this.pingEvery = await this.readPingInterval();
    } else {
      try {
        await this.call(['PING']);
      } catch {
        void this.recover();
      }
    }
    this.schedulePing();
  }

  /** A third of the server's `rlock.watchdog-idle-ms` (of the default when it is 0 or unreadable). */
  private async readPingInterval(): Promise<number> {
    let idle = DEFAULT_IDLE_MS;
    try {
      const reply = await this.call(['CONFIG', 'GET', 'rlock.watchdog-idle-ms']);
      const ms = Number(field(reply, 'rlock.watchdog-idle-ms'));
      if (Number.isFinite(ms) && ms > 0) idle = ms;
    } catch {
      // an ACL without CONFIG: the default
    }
    return Math.max(10, Math.floor(idle / 3));
  }

  // ---- the subscriber and the waits ----

  private subscriber(): Promise<Subscriber> {
    if (this.closed) return Promise.reject(new ConnectionError('rlock: the client was closed'));
    if (this.sub) return Promise.resolve(this.sub);
    if (!this.subOpening) {
      this.subOpening = this.openSubscriber().finally(() => {
        this.subOpening = null;
      });
    }
    return this.subOpening;
  }

  private async openSubscriber(): Promise<Subscriber> {
    const conn = await withTimeout(this.driver.open(), this.responseTimeout * 2, 'connect');
    try {
      const t = this.responseTimeout;
      const channel = String(plain(await withTimeout(conn.send(['RLOCK.CHANNEL']), t, 'RLOCK.CHANNEL')));
      const clientId = Number(await withTimeout(conn.send(['CLIENT', 'ID']), t, 'CLIENT ID'));
      await withTimeout(conn.subscribe(channel, (message) => this.dispatch(message)), t, 'SUBSCRIBE');
      if (this.closed) throw new ConnectionError('rlock: the client was closed');
      const sub = { conn, clientId, generation: ++this.subGeneration };
      this.sub = sub;
      conn.onDown(() => this.subscriberDown(sub));
      return sub;
    } catch (err) {
      conn.close();
      throw err;
    }
  }

  private subscriberDown(sub: Subscriber): void {
    if (this.sub === sub) this.sub = null;
    // The server took this connection's waits out of its queues: they are sent again.
    for (const [target, list] of this.waiters) {
      const kept = list.filter((waiter) => waiter.generation !== sub.generation);
      for (const waiter of list) {
        if (waiter.generation === sub.generation && !waiter.ghost) waiter.settle({ kind: 'disconnected' });
      }
      if (kept.length) this.waiters.set(target, kept);
      else this.waiters.delete(target);
    }
  }

  private dispatch(payload: Buffer): void {
    const message = parseMessage(payload);
    if (!message) return;
    const target = targetOf(message.type, message.key, message.owner);
    if (message.event === 'lost') {
      const token = Number(message.value);
      for (const holding of [...this.holdings]) {
        if (holding.target === target && holding.hasToken(token)) {
          holding.markLost(`the lock ended other than by its release (token ${message.value})`);
        }
      }
      return;
    }
    const list = this.waiters.get(target);
    let waiter: Waiter | undefined;
    if (list?.length) {
      let index = 0;
      if (message.event === 'timeout') {
        // Waits of one owner on one key with different limits end in deadline order.
        for (let i = 1; i < list.length; i++) if (list[i].deadline < list[index].deadline) index = i;
      }
      waiter = list.splice(index, 1)[0];
      if (!list.length) this.waiters.delete(target);
    }
    if (!waiter || waiter.ghost) {
      if (message.event === 'granted') this.giveBack(message.type, message.key, message.owner, waiter);
      return;
    }
    if (message.event === 'granted') waiter.settle({ kind: 'granted', value: message.value });
    else if (message.event === 'timeout') waiter.settle({ kind: 'timeout' });
    else if (message.event === 'failed') waiter.settle({ kind: 'failed', value: message.value });
  }

  /** A grant that nobody waits for any more (its wait gave up): given back. */
  private giveBack(type: string, key: string, owner: string, waiter: Waiter | undefined): void {
    let args = waiter?.release ?? null;
    if (!args) {
      if (type === 'lock') args = ['RLOCK.RELEASE', key, owner];
      else if (type === 'read' || type === 'write') args = ['RWLOCK.RELEASE', key, owner, type.toUpperCase()];
    }
    if (args) this.call([...args, 'ID', requestId()]).catch(() => {});
  }

  private addWaiter(target: string, generation: number, deadline: number, release: Arg[] | null) {
    let resolve!: (outcome: Outcome) => void;
    const outcome = new Promise<Outcome>((r) => (resolve = r));
    const waiter: Waiter = {
      target,
      generation,
      deadline,
      ghost: false,
      release,
      settle: (told) => {
        waiter.told ??= told;
        resolve(told);
      },
    };
    const list = this.waiters.get(target);
    if (list) list.push(waiter);
    else this.waiters.set(target, [waiter]);
    return { waiter, outcome };
  }

  private removeWaiter(waiter: Waiter): void {
    const list = this.waiters.get(waiter.target);
    if (!list) return;
    const index = list.indexOf(waiter);
    if (index >= 0) list.splice(index, 1);
    if (!list.length) this.waiters.delete(waiter.target);
  }

  /**
   * A waiting call: the token (1 for a latch) or null when its wait ran out. The waiter is
   * registered before the call goes out (its message may overtake the reply).
   */
  async waitFor(spec: WaitSpec): Promise<Waited | null> {
    const deadline = spec.waitMs === undefined ? Infinity : Date.now() + spec.waitMs;
    let attempts = 0;
    let retried = false;
    for (;;) {
      spec.signal?.throwIfAborted();
      const sub = await this.subscriber();
      const waitMs = deadline === Infinity ? 0 : Math.max(1, deadline - Date.now());
      const added = [spec.target, ...(spec.more ?? [])].map((target) =>
        this.addWaiter(target, sub.generation, deadline, spec.release),
      );
      const waiters = added.map((one) => one.waiter);
      const dropAll = () => waiters.forEach((one) => this.removeWaiter(one));
      const outcome = added.length === 1 ? added[0].outcome : allGranted(added.map((one) => one.outcome));
      let called: Called;
      try {
        called = await this.callEx(spec.build(sub.clientId, waitMs), spec.timeout);
      } catch (err) {
        dropAll();
        // The subscriber dropped between our look at it and the call: wait again on a new one.
        if (err instanceof ServerReply && /not subscribed/.test(err.message) && attempts++ < 3) continue;
        throw err;
      }
      retried ||= called.retried;
      const reply = called.reply;
      if (typeof reply === 'number' || Array.isArray(reply)) {
        dropAll();
        const tokens = Array.isArray(reply) ? reply.map(Number) : [reply];
        return { token: tokens[0], tokens, queued: false, retried };
      }
      if (reply === null || reply === undefined) {
        dropAll();
        return null;
      }
      if (reply !== 'WAITING') {
        dropAll();
        throw new ServerReply(`ERR unexpected reply to ${String(spec.build(0, 0)[0])}: ${String(reply)}`);
      }
      const result = await this.settled(waiters, outcome, deadline + spec.timeout, spec.signal);
      // The other keys' messages of an all-or-none wait that ended: nobody waits for them.
      if (result.kind !== 'granted' && result.kind !== 'deadline' && result.kind !== 'abort') dropAll();
      switch (result.kind) {
        case 'granted': {
          const tokens = waiters.map((one) => Number((one.told as { value: string }).value));
          return { token: tokens[0], tokens, queued: true, retried };
        }
        case 'timeout':
          return null;
        case 'failed':
          throw new ServerReply(`${result.value} the wait failed when its turn came`);
        case 'closed':
          throw new ConnectionError('rlock: the client was closed');
        case 'disconnected':
        case 'resend':
          // Sent again with its id: it takes over its entry, or answers as the first did.
          if (attempts++ < 5) continue;
          throw new ConnectionFailure('the subscriber connection kept dropping while waiting');
        case 'deadline':
          await this.giveUp(waiters, spec);
          return null;
        case 'abort':
          await this.giveUp(waiters, spec);
          throw spec.signal!.reason;
      }
    }
  }

  /**
   * The message for `waiters` (one, or one per key of an all-or-none wait), or its local
   * deadline, or the abort of `signal`, whichever first.
   */
  private settled(waiters: Waiter[], outcome: Promise<Outcome>, deadline: number, signal?: AbortSignal): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      const onAbort = () => finish({ kind: 'abort' });
      const finish = (result: Outcome) => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        // Messages dispatched before the abort or deadline win: their grant is ours.
        if (waiters.every((waiter) => waiter.told)) result = waiters.find((w) => w.told!.kind !== 'granted')?.told ?? waiters[0].told!;
        if (result.kind === 'abort' || result.kind === 'deadline') {
          for (const waiter of waiters) {
            if (waiter.told?.kind === 'granted') {
              // Part of an all-or-none grant whose other messages did not come in time.
              this.giveBack(...splitTarget(waiter.target), waiter);
            } else if (!waiter.told) {
              // Still queued as far as we know: it stays, to absorb its message.
              waiter.ghost = true;
              waiter.settle = () => {};
            }
          }
        }
        resolve(result);
      };
      outcome.then(finish);
      if (Number.isFinite(deadline)) {
        timer = setTimeout(() => finish({ kind: 'deadline' }), Math.max(0, deadline - Date.now()));
      }
      if (signal) {
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }
    }).then((result) => {
      // The first of them wins; later ones find the promise settled.
      return result;
    });
  }

  /** Leaves the queue (`RLOCK.CANCEL`); a grant that raced it is given back when it comes. */
  private async giveUp(waiters: Waiter[], spec: WaitSpec): Promise<void> {
    const [waiter] = waiters;
    if (!spec.cancel) return;
    try {
      const removed = Number(await this.call(spec.cancel, spec.timeout));
      if (removed > 0) {
        // One cancel takes an all-or-none request out of every queue.
        waiters.forEach((one) => this.removeWaiter(one));
        // RLOCK.CANCEL took out every entry of this owner at this key: the others go again.
        for (const other of [...(this.waiters.get(spec.target) ?? [])]) {
          if (!other.ghost) {
            this.removeWaiter(other);
            other.settle({ kind: 'resend' });
          }
        }
      }
    } catch {
      // the ghost absorbs the message when it comes
    }
  }

  // ---- closing ----

  /** `dependent.close()` runs when this hub closes (the user's client was closed). */
  adopt(dependent: { close(): void }): void {
    if (this.closed) dependent.close();
    else this.dependents.add(dependent);
  }

  disown(dependent: { close(): void }): void {
    this.dependents.delete(dependent);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.pingTimer) clearTimeout(this.pingTimer);
    this.pingTimer = null;
    for (const list of this.waiters.values()) for (const waiter of list) waiter.settle({ kind: 'closed' });
    this.waiters.clear();
    for (const holding of [...this.holdings]) holding.markLost('the client was closed');
    this.holdings.clear();
    this.conn?.close();
    this.conn = null;
    this.sub?.conn.close();
    this.sub = null;
    for (const dependent of [...this.dependents]) dependent.close();
    this.dependents.clear();
  }
}
