/**
 * Reply deadlines of one connection: each command sent with a time limit fails with a
 * `ConnectionFailure` when its reply has not come by then, and the connection is closed (the
 * retry rule opens a new one). One timer per connection, armed for the earliest deadline
 * pending, serves every command: a timer set and cleared per command was, with its promise,
 * a good part of what an uncontended acquire+release pair cost (docs/benchmark.md).
 *
 * The timer is not re-armed when a reply comes: when it fires, it fails what is overdue and
 * is armed again for the earliest deadline still pending, if any. It is unref'd: the
 * connection's socket keeps the process alive while a reply is awaited.
 */

import type { Arg } from './drivers/driver';
import { ConnectionFailure } from './errors';

export interface Deadline {
  /** ms since the epoch. */
  readonly at: number;
  readonly ms: number;
  /** The command's name, for the error. */
  readonly what: Arg;
  readonly fail: (err: ConnectionFailure) => void;
}

export class Deadlines {
  private readonly pending = new Set<Deadline>();
  private timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (Infinity: none armed). */
  private due = Infinity;

  /** `onOverdue` runs after the overdue commands failed (closes the connection). */
  constructor(private readonly onOverdue: () => void) {}

  /** Starts the deadline of a command named `what`, `ms` from now; `fail` is called when it passes. */
  start(what: Arg, ms: number, fail: (err: ConnectionFailure) => void): Deadline {
    const deadline: Deadline = { at: Date.now() + ms, ms, what, fail };
    this.pending.add(deadline);
    if (deadline.at < this.due) this.arm(deadline.at);
    return deadline;
  }

  /** The reply came (or the command failed otherwise). */
  end(deadline: Deadline): void {
    this.pending.delete(deadline);
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.due = at;
    this.timer = setTimeout(() => this.check(), Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  private check(): void {
    this.timer = null;
    this.due = Infinity;
    const now = Date.now();
    let next = Infinity;
    let overdue = false;
    for (const deadline of this.pending) {
      if (deadline.at <= now) {
        this.pending.delete(deadline);
        overdue = true;
        deadline.fail(new ConnectionFailure(`no reply to ${String(deadline.what)} within ${deadline.ms} ms`));
      } else if (deadline.at < next) {
        next = deadline.at;
      }
    }
    if (overdue) this.onOverdue();
    if (next < Infinity) this.arm(next);
  }
}
