/**
 * Keep-alive: while a Session's command connection carries a watchdog holding, it is `PING`ed
 * every third of the server's `rlock.watchdog-idle-ms`, so an idle holder is not taken for a
 * dead one; a PING that fails starts the re-binding.
 */

import { field } from './reply';

/** The server's default `rlock.watchdog-idle-ms`, used when `CONFIG GET` is refused. */
const DEFAULT_IDLE_MS = 30_000;

export interface KeepAliveHost {
  readonly closed: boolean;
  /** Whether any watchdog holding is bound to the command connection. */
  hasBound(): boolean;
  call(args: Array<string | number>): Promise<unknown>;
  /** Reconnects and re-binds after a failed PING. */
  recover(): Promise<void>;
}

export class KeepAlive {
  private timer: NodeJS.Timeout | null = null;
  private every: number | null = null;

  constructor(private readonly host: KeepAliveHost) {}

  /** Starts the PINGs if a watchdog holding needs them and they are not running. */
  schedule(): void {
    if (this.timer || this.host.closed || !this.host.hasBound()) return;
    this.timer = setTimeout(() => void this.tick(), this.every ?? 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    this.timer = null;
    if (this.host.closed || !this.host.hasBound()) return;
    if (this.every === null) {
      this.every = await this.readInterval();
    } else {
      try {
        await this.host.call(['PING']);
      } catch {
        void this.host.recover();
      }
    }
    this.schedule();
  }

  /** A third of the server's `rlock.watchdog-idle-ms` (of the default when it is 0 or unreadable). */
  private async readInterval(): Promise<number> {
    let idle = DEFAULT_IDLE_MS;
    try {
      const reply = await this.host.call(['CONFIG', 'GET', 'rlock.watchdog-idle-ms']);
      const ms = Number(field(reply, 'rlock.watchdog-idle-ms'));
      if (Number.isFinite(ms) && ms > 0) idle = ms;
    } catch {
      // an ACL without CONFIG: the default
    }
    return Math.max(10, Math.floor(idle / 3));
  }
}
