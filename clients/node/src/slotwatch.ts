/**
 * Cluster: a slot that `MIGRATE` moves takes its locks along, but not their watchdog bindings,
 * and nothing tells the holder. While a Session holds with the watchdog, it looks every second
 * at its node's `CLUSTER NODES` line, re-binds a holding whose slot is migrating or served
 * elsewhere where the key is now (`ASK`/`MOVED` followed), and moves the holding there.
 */

import { plain } from './reply';
import type { Session } from './session';
import { keySlot, ownSlots } from './slot';

const SLOT_CHECK_MS = 1000;

export class SlotWatch {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly session: Session) {}

  /** Starts looking if this is a Cluster Session with watchdog holdings and it is not already. */
  schedule(): void {
    const session = this.session;
    if (this.timer || session.closed || !session.elsewhere || !session.hasBound()) return;
    this.timer = setTimeout(() => void this.check(), SLOT_CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async check(): Promise<void> {
    const session = this.session;
    try {
      const own = ownSlots(String(plain(await session.call(['CLUSTER', 'NODES']))));
      for (const holding of [...session.dispatcher.holdings]) {
        const args = holding.rebindArgs();
        if (!args) continue;
        const slot = keySlot(String(args[1]));
        if (own.serves(slot) && !own.migrating.has(slot)) continue;
        const called = await session.callEx(args);
        if (called.session !== session && session.dispatcher.holdings.delete(holding)) {
          called.session.register(holding);
          holding.movedTo?.(called.session);
        }
        if (Number(called.reply) !== 1) holding.markLost('the lock ended while its slot moved');
      }
    } catch {
      // looked at again in a second; a broken connection re-binds everything anyway
    } finally {
      this.timer = null;
      this.schedule();
    }
  }
}
