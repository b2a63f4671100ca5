/**
 * What rlock needs of a client library: connections of its own, made with the user's client's
 * `duplicate()` so host, TLS, auth and database carry over. One small adapter per library
 * (ioredis, node-redis); everything else is shared.
 *
 * A `Connection` never reconnects and never resends by itself: when it drops it is gone
 * (`onDown`), and rlock opens a new one and applies its own retry rule (the same request id,
 * once more). Commands sent while it is not ready fail at once.
 */

export type Arg = string | number | Buffer;

export interface Connection {
  /**
   * Sends one command. Resolves with the reply (integers as numbers, nil as null, simple and
   * bulk strings as strings). Rejects with `ServerReply` for an error reply and with
   * `ConnectionFailure` when the connection failed before the reply came.
   */
  send(args: Arg[]): Promise<unknown>;
  /** Subscribes this connection to `channel`; each message is handed over as a Buffer. */
  subscribe(channel: string, listener: (message: Buffer) => void): Promise<void>;
  /** Runs once when the connection is gone, whatever the cause (also after `close()`). */
  onDown(listener: () => void): void;
  /** Closes the connection at once (pending commands fail). */
  close(): void;
}

export interface Driver {
  readonly library: 'ioredis' | 'node-redis';
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

/** True for an error reply of the server, as either library reports it. */
export function isReplyError(err: unknown): boolean {
  for (let proto = err && Object.getPrototypeOf(err); proto; proto = Object.getPrototypeOf(proto)) {
    const name = proto.constructor?.name;
    if (name === 'ReplyError' || name === 'ErrorReply') return true;
  }
  return false;
}
