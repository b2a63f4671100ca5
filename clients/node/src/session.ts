/**
 * The Session: the connections rlock keeps for one user client, shared by every lock object
 * made on it.
 *
 * - the command connection: every acquire, release, renew and cancel goes here, and every
 *   watchdog holding is bound to it (kept alive by `KeepAlive`). When it drops, a new one is
 *   opened at once and each holding is re-bound with `RENEW ... PX lease WATCHDOG` (0 = lost).
 *   A call that fails on a broken connection is sent once more, unchanged (same `ID`), on the
 *   new one (the retry rule).
 * - the subscriber: subscribed to its own `__rlock__` channel; its messages go to the
 *   `Dispatcher`, which settles the waits (`wait.ts`) and reports lost holdings.
 */

import { Confirm, Replicas, Unconfirmed, confirmedCount } from './confirm';
import { Arg, Connection, Driver } from './drivers/driver';
import { Connections, Elsewhere, Route, Router } from './router';
import { ConnectionError, ConnectionFailure, ServerReply } from './errors';
import { Dispatcher, Holding, SWEEP_AT_LEAST } from './dispatcher';
import { KeepAlive } from './keepalive';
import { plain } from './reply';
import { DEFAULT_RESPONSE_TIMEOUT, RECONNECT_PAUSE_MS, isRedirect, isTryAgain, requestId, sleep, withTimeout } from './request';
import { SlotWatch } from './slotwatch';
import { FirstAttempt, WaitSpec, Waited, waitByMessage } from './wait';

export interface Called {
  reply: unknown;
  generation: number;
  /** Sent a second time on a new connection. */
  retried: boolean;
  /** With a `Confirm`: the write (a non-nil reply) was acknowledged by too few replicas. */
  unconfirmed?: Unconfirmed;
  /** The Session that answered: another primary's after a `MOVED`/`ASK` (Cluster). */
  session: Session;
}

export function replyOf(called: Called): unknown {
  return called.reply;
}

function replyAndUnconfirmed(called: Called): [unknown, Unconfirmed | undefined] {
  return [called.reply, called.unconfirmed];
}

/** A call sent where its key is served, redirections followed. */
export const DIRECT: Route = {};

/** A call that names this Session's subscriber (a wait): a `MOVED`/`ASK` reply rejects. */
export const NOT_FOLLOWED: Route = { follow: false };

/** A subscriber generation that matches none (no subscriber was open). */
const NONE = -1;

/** The connections an error reply came through (`callOnce`), for `redirect`. */
const answeredOn = new WeakMap<object, Connections>();

/** How long opening a connection is tried again where the driver finds the primary itself. */
const FAILOVER_WINDOW_MS = 30_000;

/** How many times a call follows a primary that turned replica, or a moved slot, before it fails. */
const MAX_REDIRECTS = 50;

export interface Subscriber {
  conn: Connection;
  clientId: number;
  generation: number;
}

export class Session {
  /** The session of the node serving `key` for `client` (made at first use; a new one after the client was closed). */
  static of(client: unknown, key?: string): Session {
    return Router.of(client).session(key);
  }

  /** Closes the connections rlock opened for `client` (its holdings end). */
  static close(client: unknown): void {
    Router.close(client);
  }

  closed = false;
  readonly dispatcher = new Dispatcher((args) => void this.call([...args, 'ID', requestId()]).catch(() => {}));
  private readonly keepAlive = new KeepAlive(this);
  private conn: Connection | null = null;
  private opening: Promise<[Connection, number]> | null = null;
  private generation = 0;
  private lastContact = Date.now();
  private recovering = false;
  /** The replica count of the node the command connection is on (Confirm). */
  private readonly replicas = new Replicas();

  private sub: Subscriber | null = null;
  private subOpening: Promise<Subscriber> | null = null;
  private subGeneration = 0;
  /** Closed with the session: the observers, each with a connection of its own. */
  private readonly dependents = new Set<{ close(): void }>();
  /** Cluster: the Session a `MOVED`/`ASK` reply sends a command to (null: this one, reconnected). */
  elsewhere: ((message: string) => Promise<Elsewhere | null>) | null = null;
  private readonly slotWatch = new SlotWatch(this);
  /** How many registered holdings make `register` drop the idle ones. */
  private sweepAt = SWEEP_AT_LEAST;

  constructor(
    readonly driver: Driver,
    private readonly responseTimeout = DEFAULT_RESPONSE_TIMEOUT,
  ) {}

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

  /**
   * A new connection. Where the driver finds the primary itself (Sentinel), a failover under
   * way is waited out: opening is tried again for up to `FAILOVER_WINDOW_MS`.
   */
  private async open(name?: string): Promise<Connection> {
    const deadline = Date.now() + (this.driver.discovers ? FAILOVER_WINDOW_MS : 0);
    for (;;) {
      try {
        return await withTimeout(this.driver.open(name), this.responseTimeout * 2, 'connect');
      } catch (err) {
        if (this.closed || Date.now() >= deadline) throw err;
        await sleep(RECONNECT_PAUSE_MS);
      }
    }
  }

  private async openCommand(): Promise<[Connection, number]> {
    const conn = await this.open();
    if (this.closed) {
      conn.close();
      throw new ConnectionError('rlock: the client was closed');
    }
    const generation = ++this.generation;
    try {
      await this.rebind(conn);
    } catch (err) {
      conn.close();
      throw err;
    }
    this.conn = conn;
    this.replicas.invalidate();
    this.lastContact = Date.now();
    conn.onDown(() => this.commandDown(conn));
    return [conn, generation];
  }

  /** Re-bind: a new connection takes over every watchdog holding before anything else is sent on it. */
  private async rebind(conn: Connection): Promise<void> {
    const rebinds = [...this.dispatcher.holdings].flatMap((holding) => {
      const args = holding.rebindArgs();
      return args ? [{ holding, args }] : [];
    });
    await Promise.all(
      rebinds.map(async ({ holding, args }) => {
        try {
          const still = await withTimeout(conn.send(args), this.responseTimeout, 'RENEW', () => conn.close());
          if (Number(still) !== 1) holding.markLost('the lock ended while its connection was down');
        } catch (err) {
          if (!(err instanceof ServerReply)) throw err;
          // Its slot moved to another primary (Cluster): the slot watch re-binds it there.
          if (/^(MOVED|ASK) /.test(err.message) && this.elsewhere) return;
          holding.markLost(`re-binding failed: ${err.message}`);
        }
      }),
    );
  }

  private commandDown(conn: Connection): void {
    if (this.conn !== conn) return;
    this.conn = null;
    this.lastContact = Math.max(this.lastContact, conn.repliedAt);
    if (!this.closed && this.hasBound()) void this.recover();
  }

  /** Whether any watchdog holding is bound to the command connection. */
  hasBound(): boolean {
    return [...this.dispatcher.holdings].some((holding) => holding.rebindArgs() !== null);
  }

  /** Reconnects (and so re-binds) at once; a holding whose server stayed silent a whole lease is lost. */
  async recover(): Promise<void> {
    if (this.recovering) return;
    this.recovering = true;
    try {
      while (!this.closed && this.hasBound()) {
        try {
          await this.current();
          return;
        } catch {
          const silent = Date.now() - Math.max(this.lastContact, this.conn?.repliedAt ?? 0);
          for (const holding of this.dispatcher.holdings) {
            if (holding.rebindArgs() !== null && silent >= holding.lease) {
              holding.markLost('the server could not be reached for a whole lease');
            }
          }
          await sleep(RECONNECT_PAUSE_MS);
        }
      }
    } finally {
      this.recovering = false;
    }
  }

  /** The reply (plain), or a `ConnectionFailure` (the connection closed) when none came within `timeout`. */
  private sendOn(conn: Connection, args: Arg[], timeout: number): Promise<unknown> {
    return conn.send(args, timeout);
  }

  /**
   * The command (after `ASKING` with `asking`), and with `confirm` its `WAIT` (`WAITAOF`)
   * pipelined after it on the same connection: the reply, and whether a write it made (a
   * non-nil reply) was confirmed.
   */
  private async sendConfirmed(
    conn: Connection,
    args: Arg[],
    timeout: number,
    confirm: Confirm | null,
    asking = false,
  ): Promise<[unknown, Unconfirmed | undefined]> {
    const wait = confirm ? await this.replicas.words(confirm, (a) => this.sendOn(conn, a, timeout)) : null;
    if (asking) this.sendOn(conn, ['ASKING'], timeout).catch(() => {});
    if (!wait || !confirm) return [await this.sendOn(conn, args, timeout), undefined];
    const first = this.sendOn(conn, args, timeout + confirm.timeout);
    const second = this.sendOn(conn, wait.words, timeout + confirm.timeout);
    second.catch(() => {});
    const reply = await first;
    const waited = await second;
    if (reply === null || reply === undefined) return [reply, undefined];
    const confirmed = confirmedCount(wait.words, waited);
    if (confirmed >= wait.required) return [reply, undefined];
    return [reply, { confirmed, required: wait.required, timeoutMs: confirm.timeout, onFailure: confirm.onFailure }];
  }

  /**
   * One logical call with the retry rule; rejects with `ServerReply` or `ConnectionFailure`.
   * `retry` false: a call that is not safe to send twice (it has no `ID`) is not sent again.
   * `confirm`: pipelined with its WAIT (`Called.unconfirmed`). In a Cluster a `MOVED`/`ASK`
   * reply sends it to the primary named (`route`).
   */
  callEx(
    args: Arg[],
    timeout = this.responseTimeout,
    retry = true,
    confirm: Confirm | null = null,
    route: Route = DIRECT,
  ): Promise<Called> {
    // The first attempt is the whole call unless the server redirects it: no frame around it.
    // On an open connection, with nothing to confirm and no `ASKING`, the command alone: one
    // `then` on its reply, no `async` frame awaiting it (what follows an error is `attemptFailed`).
    const conn = this.conn;
    if (conn && !this.closed && !route.asking && (!confirm || this.replicas.noneNeeded(confirm))) {
      const generation = this.generation;
      const subscriber = this.sub?.generation ?? NONE;
      return this.sendOn(conn, args, timeout).then(
        (reply) => ({ reply, generation, retried: false, unconfirmed: undefined, session: this }),
        (err) => this.attemptFailed(err, conn, generation, subscriber, args, timeout, retry, confirm, false, route),
      );
    }
    return this.callOnce(args, timeout, retry, confirm, route.asking ?? false, route);
  }

  /**
   * `callEx` for a caller that reads only the reply: `onReply(reply)`, or `onError(err)` when
   * the call fails, run in the `then` on the reply itself when the command connection is open
   * (no record of the call made, no second `then` to read it). Redlock's votes.
   */
  callThen<T>(
    args: Arg[],
    timeout: number,
    onReply: (reply: unknown) => T | Promise<T>,
    onError: (err: unknown) => T | Promise<T>,
  ): Promise<T> {
    return this.callRead(args, timeout, null, DIRECT, onReply, (called) => called.then((c) => onReply(c.reply), onError));
  }

  /**
   * `callEx` read in one `then`: on an open connection, with nothing to confirm, `onReply(reply)`
   * runs in the `then` on the reply itself (no record of the call, no `then` to read it);
   * otherwise, and when that first attempt failed, `onCalled` gets `callEx`'s promise of the
   * whole call (the retry rule, redirections as `route` says, confirmation).
   */
  callRead<T>(
    args: Arg[],
    timeout: number,
    confirm: Confirm | null,
    route: Route,
    onReply: (reply: unknown, generation: number) => T | Promise<T>,
    onCalled: (called: Promise<Called>) => T | Promise<T>,
  ): Promise<T> {
    const conn = this.conn;
    if (!conn || this.closed || route.asking || (confirm && !this.replicas.noneNeeded(confirm)))
      return Promise.resolve(onCalled(this.callEx(args, timeout, true, confirm, route)));
    const generation = this.generation;
    const subscriber = this.sub?.generation ?? NONE;
    return conn.sendThen(
      args,
      timeout,
      (reply) => onReply(reply, generation),
      (err) => onCalled(this.attemptFailed(err, conn, generation, subscriber, args, timeout, true, confirm, false, route)),
    );
  }

  /** What follows an attempt of `callEx` that got the error reply `err`: redirections, pauses, new attempts. */
  private async callAgain(
    err: unknown,
    args: Arg[],
    timeout: number,
    retry: boolean,
    confirm: Confirm | null,
    route: Route,
    asking: boolean,
  ): Promise<Called> {
    let session: Session = this;
    for (let redirects = 0; ; redirects++) {
      if (!(err instanceof ServerReply) || redirects >= MAX_REDIRECTS) throw err;
      const elsewhere = await session.redirection(err.message);
      if (elsewhere) {
        if (route.follow === false) throw err;
        ({ session, asking } = elsewhere);
      } else if (isTryAgain(err.message)) {
        // Refused before it ran (a multi-key call while its slot moves, a cluster or primary
        // not ready yet): the same again after a pause.
        await sleep(RECONNECT_PAUSE_MS);
      } else {
        // A primary that turned replica ran nothing: find the new one and send it there.
        if (!isRedirect(err.message)) throw err;
        asking = false;
        session.redirect(session.answeredOn(err));
        await sleep(RECONNECT_PAUSE_MS);
      }
      try {
        return await session.callOnce(args, timeout, retry, confirm, asking);
      } catch (again) {
        err = again;
      }
    }
  }

  /** The Session a Cluster redirection reply sends a command to, if another one. */
  async redirection(message: string): Promise<Elsewhere | null> {
    if (!this.elsewhere || !/^(MOVED|ASK) /.test(message)) return null;
    return this.elsewhere(message);
  }

  /**
   * One attempt, sent again once on a new connection after a `ConnectionFailure` (`retry`).
   * With `route` (the first attempt of `callEx`), an error reply goes on to `callAgain`.
   */
  private async callOnce(
    args: Arg[],
    timeout: number,
    retry: boolean,
    confirm: Confirm | null,
    asking: boolean,
    route: Route | null = null,
  ): Promise<Called> {
    let conn = this.conn;
    let generation = this.generation;
    if (!conn || this.closed) [conn, generation] = await this.current();
    // The connections in use when it was sent (`answeredOn`), made into an object only on an error reply.
    const subscriber = this.sub?.generation ?? NONE;
    try {
      // Nothing to confirm (no replica, or known not to be needed): the command alone.
      if (!asking && (!confirm || this.replicas.noneNeeded(confirm))) {
        return { reply: await this.sendOn(conn, args, timeout), generation, retried: false, unconfirmed: undefined, session: this };
      }
      const [reply, unconfirmed] = await this.sendConfirmed(conn, args, timeout, confirm, asking);
      return { reply, generation, retried: false, unconfirmed, session: this };
    } catch (err) {
      return this.attemptFailed(err, conn, generation, subscriber, args, timeout, retry, confirm, asking, route);
    }
  }

  /**
   * What follows a first attempt sent on `conn` (of `generation`, with the subscriber of
   * `subscriber`) that failed with `err`: an error reply is followed where it redirects (with
   * `route`) or rejects; a `ConnectionFailure` is sent once more, unchanged, on a new connection.
   */
  private async attemptFailed(
    err: unknown,
    conn: Connection,
    generation: number,
    subscriber: number,
    args: Arg[],
    timeout: number,
    retry: boolean,
    confirm: Confirm | null,
    asking: boolean,
    route: Route | null,
  ): Promise<Called> {
    if (err instanceof ServerReply) {
      answeredOn.set(err, { command: generation, subscriber });
      if (route) return this.callAgain(err, args, timeout, retry, confirm, route, asking);
    }
    if (!(err instanceof ConnectionFailure)) throw err;
    if (this.conn === conn) conn.close();
    this.replicas.invalidate();
    if (!retry) throw err;
    [conn, generation] = await this.current();
    const on = this.connections(generation);
    try {
      const [reply, unconfirmed] = await this.sendConfirmed(conn, args, timeout, confirm, asking);
      return { reply, generation, retried: true, unconfirmed, session: this };
    } catch (again) {
      if (!(again instanceof ServerReply)) throw again;
      answeredOn.set(again, on);
      if (route) return this.callAgain(again, args, timeout, retry, confirm, route, asking);
      throw again;
    }
  }

  /** The connections (generations) in use now, with the command connection of `generation`. */
  private connections(generation: number): Connections {
    return { command: generation, subscriber: this.sub?.generation ?? NONE };
  }

  /** The connections in use when the server gave the error reply `err`. */
  answeredOn(err: unknown): Connections {
    return answeredOn.get(err as object) ?? {};
  }

  /**
   * The node is no longer the primary (`READONLY`, a wait `failed` with it): the connections
   * close, and the new ones find the new primary (the re-binding and the waits' resend follow).
   * `seen`: only the connections of those generations, those that met the old primary: a late
   * `READONLY` must not close the new primary's connection, whose watchdog holdings would end.
   */
  redirect(seen: Connections = {}): void {
    if (seen.command === undefined || seen.command === this.generation) this.conn?.close();
    if (seen.subscriber === undefined || seen.subscriber === this.sub?.generation) this.sub?.conn.close();
  }

  call(args: Arg[], timeout = this.responseTimeout, retry = true): Promise<unknown> {
    return this.callEx(args, timeout, retry).then(replyOf);
  }

  /** A call confirmed by the replicas (`confirm`): its reply, and what was not confirmed. */
  confirmed(
    args: Arg[],
    confirm: Confirm | null,
    timeout = this.responseTimeout,
    retry = true,
  ): Promise<[unknown, Unconfirmed | undefined]> {
    return this.callEx(args, timeout, retry, confirm).then(replyAndUnconfirmed);
  }

  /**
   * Re-bound after a reconnect, reported lost by messages; watchdog ones keep the connection
   * alive. A holding that gave back all it held stays registered, idle (it re-binds nothing and
   * is told nothing), so that its next acquire changes nothing here: the idle ones are dropped
   * when registrations have doubled since the last look.
   */
  register(holding: Holding): void {
    const holdings = this.dispatcher.holdings;
    if (!holdings.has(holding)) {
      if (holdings.size >= this.sweepAt) {
        for (const other of holdings) if (other.idle()) holdings.delete(other);
        this.sweepAt = Math.max(SWEEP_AT_LEAST, 2 * holdings.size);
      }
      holdings.add(holding);
    }
    this.keepAlive.schedule();
    this.slotWatch.schedule();
  }

  unregister(holding: Holding): void {
    this.dispatcher.holdings.delete(holding);
  }

  // ---- the subscriber ----

  /** The subscriber when it is open (else `subscriber()` opens one). */
  get subscribed(): Subscriber | null {
    return this.closed ? null : this.sub;
  }

  subscriber(): Promise<Subscriber> {
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
    const conn = await this.open();
    try {
      const t = this.responseTimeout;
      const channel = String(plain(await withTimeout(conn.send(['RLOCK.CHANNEL']), t, 'RLOCK.CHANNEL')));
      const clientId = Number(await withTimeout(conn.send(['CLIENT', 'ID']), t, 'CLIENT ID'));
      await withTimeout(
        conn.subscribe(channel, (message) => this.dispatcher.dispatch(message)),
        t,
        'SUBSCRIBE',
      );
      if (this.closed) throw new ConnectionError('rlock: the client was closed');
      const sub = { conn, clientId, generation: ++this.subGeneration };
      this.sub = sub;
      conn.onDown(() => {
        if (this.sub === sub) this.sub = null;
        // The server took this connection's waits out of its queues: they are sent again.
        this.dispatcher.subscriberDown(sub.generation);
      });
      return sub;
    } catch (err) {
      conn.close();
      throw err;
    }
  }

  /** A waiting call, told by message (`wait.ts`): the token, or null when its wait ran out. */
  waitFor(spec: WaitSpec, first?: FirstAttempt): Promise<Waited | null> {
    return waitByMessage(this, spec, first);
  }

  // ---- closing ----

  /** `dependent.close()` runs when this session closes (the user's client was closed). */
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
    this.keepAlive.stop();
    this.slotWatch.stop();
    this.dispatcher.close();
    this.conn?.close();
    this.conn = null;
    this.sub?.conn.close();
    this.sub = null;
    for (const dependent of [...this.dependents]) dependent.close();
    this.dependents.clear();
  }
}
