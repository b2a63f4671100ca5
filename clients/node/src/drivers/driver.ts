/**
 * What rlock needs of a client library: connections of its own, made with the user's client's
 * `duplicate()` so host, TLS, auth and database carry over. One small adapter per library
 * (ioredis, node-redis); everything else is shared.
 *
 * A `Connection` never reconnects and never resends by itself: when it drops it is gone
 * (`onDown`), and rlock opens a new one and applies its own retry rule (the same request id,
 * once more). Commands sent while it is not ready fail at once.
 */

import { Deadline, Deadlines } from '../deadlines';
import { ConnectionFailure, ServerReply } from '../errors';
import { plain } from '../reply';

export type Arg = string | number | Buffer;

export interface Connection {
  /**
   * Sends one command. Resolves with the reply (integers as numbers, nil as null, simple and
   * bulk strings as strings). Rejects with `ServerReply` for an error reply and with
   * `ConnectionFailure` when the connection failed before the reply came. With `timeoutMs`:
   * also when no reply came within that many ms, and the connection is then closed.
   */
  send(args: Arg[], timeoutMs?: number): Promise<unknown>;
  /** `send`, read where the reply is: resolves with `onReply(reply)`, or `onError(err)` where `send` rejects with `err`. */
  sendThen<T>(
    args: Arg[],
    timeoutMs: number | undefined,
    onReply: (reply: unknown) => T | Promise<T>,
    onError: (err: Error) => T | Promise<T>,
  ): Promise<T>;
  /** When its last reply came, ms since the epoch (0: none yet). */
  readonly repliedAt: number;
  /** Subscribes this connection to `channel`; each message is handed over as a Buffer. */
  subscribe(channel: string, listener: (message: Buffer) => void): Promise<void>;
  /** Runs once when the connection is gone, whatever the cause (also after `close()`). */
  onDown(listener: () => void): void;
  /** Closes the connection at once (pending commands fail). */
  close(): void;
}

export interface Driver {
  readonly library: 'ioredis' | 'node-redis';
  /** True where `open()` finds the primary itself (Sentinel): a failed open is tried again for a while. */
  readonly discovers: boolean;
  /** A new connection to the user's client's server, ready for commands, named `name` (`CLIENT SETNAME`). */
  open(name?: string): Promise<Connection>;
  /** Runs once when the user's client is closed for good (its `end`). */
  onClientEnd(listener: () => void): void;
}

/** Calls each listener once, the first time `fire` runs. */
export class Once {
  private fired = false;
  private listeners: Array<() => void> = [];
  add(listener: () => void): void {
    if (this.fired) queueMicrotask(listener);
    else this.listeners.push(listener);
  }
  fire(): void {
    if (this.fired) return;
    this.fired = true;
    for (const listener of this.listeners.splice(0)) {
      try {
        listener();
      } catch {
        // a listener's failure is not the connection's
      }
    }
  }
  get done(): boolean {
    return this.fired;
  }
}

/**
 * What the two libraries' connections share: replies and rejections read one way (`failure`),
 * nothing sent once it is down, `onDown` fired once. An adapter supplies the library's calls.
 */
export abstract class LibraryConnection implements Connection {
  protected readonly down = new Once();
  private readonly deadlines = new Deadlines(() => this.close());
  repliedAt = 0;

  /** The library's own send, its own subscribe, its own close. */
  protected abstract sendCommand(args: Arg[]): Promise<unknown>;
  protected abstract subscribeTo(channel: string, listener: (message: Buffer) => void): Promise<void>;
  protected abstract closeClient(): void;

  send(args: Arg[], timeoutMs?: number): Promise<unknown> {
    return this.sendThen(args, timeoutMs, same, rethrow);
  }

  /**
   * One promise per command, settled by the library's reply or by the deadline (no timer of
   * its own): with `onReply(reply)`, or `onError(err)`, which run where the reply is read (no
   * `then` of the caller's own on a promise of the reply).
   */
  sendThen<T>(
    args: Arg[],
    timeoutMs: number | undefined,
    onReply: (reply: unknown) => T | Promise<T>,
    onError: (err: Error) => T | Promise<T>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.down.done) {
        answer(onError, new ConnectionFailure('the connection is closed'), resolve, reject);
        return;
      }
      let settled = false;
      let deadline: Deadline | null = null;
      // Once: the deadline's failure, then the library's when the connection it closed is gone.
      const failed = (err: Error) => {
        if (settled) return;
        settled = true;
        if (deadline) this.deadlines.end(deadline);
        answer(onError, err, resolve, reject);
      };
      if (timeoutMs !== undefined) deadline = this.deadlines.start(args[0], timeoutMs, failed);
      let sent: Promise<unknown>;
      try {
        sent = this.sendCommand(args);
      } catch (err) {
        failed(failure(err));
        return;
      }
      sent.then(
        (reply) => {
          if (settled) return;
          settled = true;
          if (deadline) this.deadlines.end(deadline);
          this.repliedAt = Date.now();
          answer(onReply, plain(reply), resolve, reject);
        },
        (err) => failed(failure(err)),
      );
    });
  }

  async subscribe(channel: string, listener: (message: Buffer) => void): Promise<void> {
    try {
      await this.subscribeTo(channel, listener);
    } catch (err) {
      throw failure(err);
    }
  }

  onDown(listener: () => void): void {
    this.down.add(listener);
  }

  close(): void {
    try {
      this.closeClient();
    } catch {
      // already closed
    }
    this.down.fire();
  }
}

function same(reply: unknown): unknown {
  return reply;
}

function rethrow(err: Error): never {
  throw err;
}

/** Settles a promise with what `fn` makes of `value` (rejected where `fn` throws). */
function answer<V, T>(
  fn: (value: V) => T | Promise<T>,
  value: V,
  resolve: (result: T | Promise<T>) => void,
  reject: (err: unknown) => void,
): void {
  try {
    resolve(fn(value));
  } catch (err) {
    reject(err);
  }
}

/**
 * A library's rejection as rlock's: `ServerReply` for the server's error reply, else
 * `ConnectionFailure` (the retry rule depends on which).
 */
export function failure(err: unknown): Error {
  if (isReplyError(err)) return new ServerReply((err as Error).message);
  return new ConnectionFailure((err as Error)?.message ?? String(err), { cause: err });
}

/** Connects a new connection's client; on failure closes it, so that nothing is left half open. */
export async function connected<C extends Connection>(connection: C, connect: () => Promise<unknown>): Promise<C> {
  try {
    await connect();
  } catch (err) {
    connection.close();
    throw new ConnectionFailure(`cannot connect: ${(err as Error)?.message ?? err}`, { cause: err });
  }
  return connection;
}

/** True for an error reply of the server, as either library reports it. */
export function isReplyError(err: unknown): boolean {
  for (let proto = err && Object.getPrototypeOf(err); proto; proto = Object.getPrototypeOf(proto)) {
    const name = proto.constructor?.name;
    if (name === 'ReplyError' || name === 'ErrorReply') return true;
  }
  return false;
}

/**
 * `conn` if `ROLE` says it reached a primary; else it is closed and the open fails (tried again
 * while a failover is under way): for a moment after one, the sentinels or the slot map a
 * client reads can still name the old primary.
 */
export async function primaryOnly(conn: Connection): Promise<Connection> {
  let role: unknown;
  try {
    role = plain(await conn.send(['ROLE']));
  } catch (err) {
    // An ACL without ROLE: not checked (a replica answers the first write READONLY or MOVED).
    if (err instanceof ServerReply) return conn;
    conn.close();
    throw err;
  }
  const name = Array.isArray(role) ? String(plain(role[0])) : String(role);
  if (name !== 'master') {
    conn.close();
    throw new ConnectionFailure(`the node named as the primary is a ${name} now`);
  }
  return conn;
}
