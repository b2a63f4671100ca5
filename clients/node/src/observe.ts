/**
 * Watching who leads, without polling: a connection of its own subscribed to the election
 * key's keyspace channel (`__keyspace@<db>__:<key>`, class `d`: rlock.acquired, rlock.released,
 * rlock.forced, rlock.dropped; with `g` and `x` also del and expired). Every event, and every
 * (re)subscription, is followed by one query of the leader (`RLOCK.LEADER`); a change of owner
 * or term is reported. Events published while the connection was down are lost, so after each
 * reconnect the query catches up: no change is missed for good.
 */

import { Connection } from './drivers/driver';
import { ConnectionError, ConnectionFailure, RLockError, ServerReply, publicError } from './errors';
import { RECONNECT_PAUSE_MS, sleep, withTimeout } from './request';
import { Session } from './session';
import { field, plain } from './reply';

/** Who holds an election's lock: the candidate id, its term (the fencing token) and its lease left in ms. */
export interface Leader {
  owner: string;
  /** The holding's fencing token, which only grows: the leader's term (null for a Redisson-written lock). */
  term: number | null;
  ttl: number;
}

/** `RLOCK.LEADER`'s reply as a Leader, or null when nobody leads. */
export function parseLeader(reply: unknown): Leader | null {
  if (reply === null || reply === undefined) return null;
  const owner = field(reply, 'owner');
  const token = field(reply, 'token');
  if (owner === undefined) throw new RLockError('ERR_RLOCK_REPLY', `unexpected RLOCK.LEADER reply: ${String(reply)}`);
  return {
    owner: String(owner),
    term: token === null || token === undefined ? null : Number(token),
    ttl: Number(field(reply, 'ttl')),
  };
}

/** The name of the observers' connections in `CLIENT LIST`. */
export const OBSERVER_NAME = 'rlock-observer';

/** True when `notify-keyspace-events` publishes module (`d`) events on keyspace channels (`K`). */
export function publishesModuleEvents(flags: string): boolean {
  return flags.includes('K') && (flags.includes('d') || flags.includes('A'));
}

type Pending = { resolve(result: IteratorResult<Leader | null>): void; reject(err: unknown): void };

/**
 * An async iterator of an election's leader: first the leader when it starts (or null), then
 * each change (null while nobody leads). Made by `Election.observe()`; it connects at once and
 * keeps every change until read. `return()` (a `break` out of `for await`), the signal, or the
 * user's client closing end it and close its connection.
 */
export class LeaderObserver implements AsyncIterableIterator<Leader | null> {
  private readonly values: Array<Leader | null> = [];
  private readonly pending: Pending[] = [];
  private failure: Error | null = null;
  private done = false;
  private conn: Connection | null = null;
  /** What was last reported: `owner\0term`, '' for nobody, undefined before the first. */
  private last: string | undefined;
  private syncing = false;
  private again = false;
  private readonly onAbort = () => this.close();

  /** @internal */
  constructor(
    private readonly session: Session,
    private readonly key: string,
    private readonly query: () => Promise<Leader | null>,
    private readonly timeout: number,
    private readonly signal?: AbortSignal,
  ) {
    session.adopt(this);
    if (signal?.aborted) this.close();
    signal?.addEventListener('abort', this.onAbort, { once: true });
    void this.run();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Leader | null>> {
    if (this.values.length) return Promise.resolve({ value: this.values.shift()!, done: false });
    if (this.failure) {
      const err = this.failure;
      this.failure = null;
      return Promise.reject(err);
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  }

  async return(): Promise<IteratorResult<Leader | null>> {
    this.close();
    return { value: undefined, done: true };
  }

  /** Ends the iteration and closes the connection (what `return()` does). */
  close(): void {
    if (this.done) return;
    this.done = true;
    this.values.length = 0;
    this.conn?.close();
    this.session.disown(this);
    this.signal?.removeEventListener('abort', this.onAbort);
    for (const waiting of this.pending.splice(0)) waiting.resolve({ value: undefined, done: true });
  }

  private fail(err: Error): void {
    if (this.done) return;
    const waiting = this.pending.shift();
    if (waiting) waiting.reject(err);
    else this.failure = err;
    this.close();
  }

  private report(leader: Leader | null): void {
    const now = leader ? `${leader.owner}\0${leader.term}` : '';
    if (this.done || now === this.last) return;
    this.last = now;
    const waiting = this.pending.shift();
    if (waiting) waiting.resolve({ value: leader, done: false });
    else this.values.push(leader);
  }

  /** Subscribes, resyncs, waits for the connection to drop, and again, until closed. */
  private async run(): Promise<void> {
    let checked = false;
    while (!this.done) {
      let conn: Connection | null = null;
      try {
        conn = await withTimeout(this.session.driver.open(OBSERVER_NAME), this.timeout * 2, 'connect');
        if (!checked) await this.checkEvents(conn);
        checked = true;
        const info = String(plain(await withTimeout(conn.send(['CLIENT', 'INFO']), this.timeout, 'CLIENT INFO')));
        const db = Number(/(?:^| )db=(\d+)/.exec(info)?.[1] ?? 0);
        const down = new Promise<void>((resolve) => conn!.onDown(resolve));
        const channel = `__keyspace@${db}__:${this.key}`;
        await withTimeout(
          conn.subscribe(channel, () => this.sync()),
          this.timeout,
          'SUBSCRIBE',
        );
        if (this.done) break;
        this.conn = conn;
        this.sync(); // what changed while we were not subscribed
        await down;
      } catch (err) {
        if (!(err instanceof ConnectionFailure)) return this.fail(publicError(err));
      } finally {
        conn?.close();
        this.conn = null;
      }
      if (!this.done) await sleep(RECONNECT_PAUSE_MS);
    }
  }

  /** Fails at once when the server does not publish rlock's keyspace events (an ACL without CONFIG: not checked). */
  private async checkEvents(conn: Connection): Promise<void> {
    let flags: string;
    try {
      const reply = await withTimeout(conn.send(['CONFIG', 'GET', 'notify-keyspace-events']), this.timeout, 'CONFIG GET');
      flags = String(field(reply, 'notify-keyspace-events') ?? '');
    } catch (err) {
      if (err instanceof ServerReply) return;
      throw err;
    }
    if (!publishesModuleEvents(flags)) {
      throw new RLockError(
        'ERR_RLOCK_NO_EVENTS',
        `observe() needs keyspace events of rlock's class: notify-keyspace-events is "${flags}"; ` +
          'set it to include K and d (CONFIG SET notify-keyspace-events Kdgx)',
      );
    }
  }

  /** One query of the leader at a time; events during it make one more. */
  private sync(): void {
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = true;
    void (async () => {
      try {
        do {
          this.again = false;
          let leader: Leader | null;
          try {
            leader = await this.query();
          } catch (err) {
            if (!(err instanceof ConnectionError)) return this.fail(err as Error);
            // The server is out of reach: ask again (the subscriber reconnects meanwhile).
            await sleep(RECONNECT_PAUSE_MS);
            this.again = true;
            continue;
          }
          this.report(leader);
        } while (this.again && !this.done);
      } finally {
        this.syncing = false;
      }
    })();
  }
}
