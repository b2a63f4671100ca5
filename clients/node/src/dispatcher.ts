/**
 * The Dispatcher: routes the `__rlock__` messages of a Session's subscriber (granted, timeout,
 * failed, lost) to the waiter or holding they are for. Waiters are registered before their call
 * goes out (a message may overtake the reply); a grant that nobody claims any more is given back.
 */

import { Arg } from './drivers/driver';
import { parseMessage } from './message';

/** What the Dispatcher and the re-binding know of a holding (implemented by the lock objects). */
export interface Holding {
  /** `<type>\0<key>\0<owner>`, as messages name it. */
  readonly target: string;
  /** The lease to re-bind with, in ms. */
  readonly lease: number;
  /** `RENEW key owner PX lease WATCHDOG` while it holds with the watchdog, else null. */
  rebindArgs(): Arg[] | null;
  hasToken(token: number): boolean;
  markLost(reason: string): void;
  /** Holds nothing now: registered only so that its next holding need not register again. */
  idle(): boolean;
  /** Now registered with (and bound on) `session`: its slot moved to another Cluster primary. */
  movedTo?(session: unknown): void;
}

export function targetOf(type: string, key: string, owner: string): string {
  return `${type}\0${key}\0${owner}`;
}

export function splitTarget(target: string): [string, string, string] {
  const first = target.indexOf('\0');
  const second = target.indexOf('\0', first + 1);
  return [target.slice(0, first), target.slice(first + 1, second), target.slice(second + 1)];
}

export type Outcome =
  | { kind: 'granted'; value: string }
  | { kind: 'timeout' }
  | { kind: 'failed'; value: string }
  | { kind: 'disconnected' }
  | { kind: 'resend' }
  | { kind: 'closed' }
  | { kind: 'deadline' }
  | { kind: 'abort' };

export interface Waiter {
  target: string;
  /** The subscriber connection (its generation) the wait was queued for. */
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
  /** Resolves the promise of `Dispatcher.outcome`, once one was made. */
  tell?: (outcome: Outcome) => void;
}

/**
 * The fewest entries at which a registry that keeps idle ones (targets nobody waits on here,
 * holdings that hold nothing in `Session.register`) looks for them to drop; the next look is
 * at twice what is left, so the looking costs O(1) a registration.
 */
export const SWEEP_AT_LEAST = 64;

/** A waiter with its `settle` on the prototype: no closure made for every wait. */
class Waiting implements Waiter {
  ghost = false;
  told?: Outcome = undefined;
  tell?: (outcome: Outcome) => void = undefined;

  constructor(
    readonly target: string,
    readonly generation: number,
    readonly deadline: number,
    readonly release: Arg[] | null,
  ) {}

  settle(told: Outcome): void {
    if (this.told) return;
    this.told = told;
    this.tell?.(told);
  }
}

export class Dispatcher {
  /** Re-bound after a reconnect, reported lost by messages. */
  readonly holdings = new Set<Holding>();
  private readonly waiters = new Map<string, Waiter[]>();
  /** How many targets make `add` drop those nobody waits on. */
  private sweepAt = SWEEP_AT_LEAST;

  /** `giveBack` sends a release (with a fresh `ID`) for a grant nobody claims. */
  constructor(private readonly send: (args: Arg[]) => void) {}

  add(target: string, generation: number, deadline: number, release: Arg[] | null): Waiter {
    const waiter = new Waiting(target, generation, deadline, release);
    const list = this.waiters.get(target);
    if (list) list.push(waiter);
    else {
      if (this.waiters.size >= this.sweepAt) this.sweep();
      this.waiters.set(target, [waiter]);
    }
    return waiter;
  }

  /** Drops the targets nobody waits on (`remove` leaves a target's list in place, empty). */
  private sweep(): void {
    for (const [target, list] of this.waiters) if (!list.length) this.waiters.delete(target);
    this.sweepAt = Math.max(SWEEP_AT_LEAST, 2 * this.waiters.size);
  }

  /**
   * The outcome `waiter` is told. Made only once the server queued the wait: an uncontended
   * acquire, granted in its reply, registers its waiter (a message may overtake the reply) but
   * never makes this promise.
   */
  static outcome(waiter: Waiter): Promise<Outcome> {
    if (waiter.told) return Promise.resolve(waiter.told);
    return new Promise<Outcome>((resolve) => (waiter.tell = resolve));
  }

  remove(waiter: Waiter): void {
    const list = this.waiters.get(waiter.target);
    if (!list) return;
    // The list stays, empty or not: the next wait on the target (the next acquire of the same
    // lock object, usually) finds it, and the map is not written on every acquire.
    if (list[list.length - 1] === waiter) list.pop();
    else {
      const index = list.indexOf(waiter);
      if (index >= 0) list.splice(index, 1);
    }
  }

  /** The live (not given up) waiters of `target`. */
  live(target: string): Waiter[] {
    return (this.waiters.get(target) ?? []).filter((waiter) => !waiter.ghost);
  }

  /** The subscriber of `generation` dropped: the server took its waits out of the queues. */
  subscriberDown(generation: number): void {
    for (const [target, list] of this.waiters) {
      const kept = list.filter((waiter) => waiter.generation !== generation);
      for (const waiter of list) {
        if (waiter.generation === generation && !waiter.ghost) waiter.settle({ kind: 'disconnected' });
      }
      if (kept.length) this.waiters.set(target, kept);
      else this.waiters.delete(target);
    }
  }

  dispatch(payload: Buffer): void {
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
  giveBack(type: string, key: string, owner: string, waiter: Waiter | undefined): void {
    let args = waiter?.release ?? null;
    if (!args) {
      if (type === 'lock') args = ['RLOCK.RELEASE', key, owner];
      else if (type === 'read' || type === 'write') args = ['RWLOCK.RELEASE', key, owner, type.toUpperCase()];
    }
    if (args) this.send(args);
  }

  /** The Session closed: every wait ends, every holding is lost. */
  close(): void {
    for (const list of this.waiters.values()) for (const waiter of list) waiter.settle({ kind: 'closed' });
    this.waiters.clear();
    for (const holding of [...this.holdings]) holding.markLost('the client was closed');
    this.holdings.clear();
  }
}
