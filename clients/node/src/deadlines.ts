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
  /** Ended (`end`), or failed. */
  done: boolean;
}

export class Deadlines {
  /**
   * The pending deadlines in the order the commands went out, which is the order their replies
   * come in on one connection: a reply ends the first, and the queue is a list with no
   * hashing (a `Set` of them cost as much as the rest of the bookkeeping of a call).
   */
  private pending: Deadline[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** When the armed timer fires (Infinity: none armed). */
  private due = Infinity;

  /** `onOverdue` runs after the overdue commands failed (closes the connection). */
  constructor(private readonly onOverdue: () => void) {}

  /** Starts the deadline of a command named `what`, `ms` from now; `fail` is called when it passes. */
  start(what: Arg, ms: number, fail: (err: ConnectionFailure) => void): Deadline {
    const deadline: Deadline = { at: Date.now() + ms, ms, what, fail, done: false };
    this.pending.push(deadline);
    if (deadline.at < this.due) this.arm(deadline.at);
    return deadline;
  }

  /** The reply came (or the command failed otherwise). */
  end(deadline: Deadline): void {
    deadline.done = true;
    const pending = this.pending;
    // The usual case: the only one, or the first (replies come in order).
    if (pending[0] === deadline) {
      if (pending.length === 1) pending.pop();
      else {
        let ended = 1;
        while (ended < pending.length && pending[ended].done) ended++;
        pending.splice(0, ended);
      }
    } else if (pending[pending.length - 1] === deadline) {
      pending.pop(); // failed as it was sent
    }
    // else: left for `check` (or the next `end` at the front) to drop
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
    const kept: Deadline[] = [];
    for (const deadline of this.pending) {
      if (deadline.done) continue;
      if (deadline.at <= now) {
        deadline.done = true;
        overdue = true;
        deadline.fail(new ConnectionFailure(`no reply to ${String(deadline.what)} within ${deadline.ms} ms`));
      } else {
        kept.push(deadline);
        if (deadline.at < next) next = deadline.at;
      }
    }
    this.pending = kept;
    if (overdue) this.onOverdue();
    if (next < Infinity) this.arm(next);
  }
}
