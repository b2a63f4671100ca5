/**
 * The spec runner's op table (clients/spec/README.md, "Which API each operation calls"): each
 * actor op as calls on rlock's public API, and rlock's errors as the spec's error kinds.
 */

import {
  CountDownLatch,
  DeadlockError,
  Election,
  LockLostError,
  LockTimeoutError,
  MultiLock,
  Mutex,
  NotConfirmedError,
  NotOwnedError,
  ReadWriteLock,
  ReplyError,
  Semaphore,
  WrongTypeError,
  closeConnections,
} from '../src';

export type Step = Record<string, any>;

/** A spec error kind, thrown by an op whose call failed (or was not granted) in that way. */
export class Kind extends Error {
  constructor(
    readonly kind: string,
    readonly detail = '',
  ) {
    super(`${kind}${detail ? `: ${detail}` : ''}`);
  }
}

/** The spec's kind of an error of the helper, or null when it is no kind (the step fails). */
export function kindOf(err: unknown, signal?: AbortSignal): string | null {
  if (err instanceof Kind) return err.kind;
  if (err instanceof LockTimeoutError) return 'NotAcquired';
  // LockLostError is a NotOwnedError: both are "not held" (never held, or lost).
  if (err instanceof NotOwnedError || err instanceof LockLostError) return 'NotHeld';
  if (err instanceof DeadlockError) return 'Deadlock';
  if (err instanceof NotConfirmedError) return 'NotConfirmed';
  if (err instanceof WrongTypeError) return 'WrongType';
  if (err instanceof ReplyError && /upgrade/.test(err.message)) return 'UpgradeRefused';
  // A wait given up by its timeout signal (campaign has no wait of its own) ran out.
  if (signal?.aborted && (signal.reason as Error)?.name === 'TimeoutError') return 'NotAcquired';
  return null;
}

/** One owner: a client of its own (as its ACL user), its handles made at first use. */
export class Actor {
  readonly handles = new Map<string, any>();
  /** Handles (by handle key) whose holding the helper reported lost. */
  readonly lost = new Set<string>();
  /** How many losses the helper reported per handle key (`onLockLost` calls). */
  readonly losses = new Map<string, number>();

  /** The helper reported the holding of handle `id` lost. */
  reportLost(id: string): void {
    this.lost.add(id);
    this.losses.set(id, (this.losses.get(id) ?? 0) + 1);
  }

  constructor(
    readonly name: string,
    readonly user: string,
    readonly owner: string,
    readonly client: any,
  ) {}

  /** The handle of `(kind, key)`, made by `make(options)` at first use with the step's lease. */
  handle<T>(kind: string, key: string, step: Step, make: (options: Record<string, any>) => T): T {
    const id = `${kind}:${key}`;
    let handle = this.handles.get(id);
    if (!handle) {
      const options: Record<string, any> = { identifier: this.owner, onLockLost: () => this.reportLost(id) };
      // A spec lease is a plain lease that ends unless released: never refreshed.
      if (step.lease_ms !== undefined) Object.assign(options, { lockTimeout: step.lease_ms, refreshInterval: 0 });
      if (step.confirm !== undefined)
        options.confirm = { replicas: step.confirm.replicas ?? 'auto', timeout: step.confirm.timeout_ms ?? 1000 };
      handle = make(options);
      this.handles.set(id, handle);
    }
    return handle;
  }

  async close(): Promise<void> {
    closeConnections(this.client);
    try {
      if (typeof this.client.call === 'function') this.client.disconnect();
      else if (this.client.isOpen) this.client.destroy();
    } catch {
      // already closed
    }
  }
}

function side(actor: Actor, step: Step): any {
  const rw = actor.handle(
    'rwlock',
    step.key,
    step,
    (o) =>
      new ReadWriteLock(actor.client, step.key, {
        ...o,
        // One callback for both sides: the spec's await_lost names a side, either is reported.
        onLockLost: () => {
          actor.reportLost(`read:${step.key}`);
          actor.reportLost(`write:${step.key}`);
        },
      }),
  );
  return step.type === 'read' ? rw.readLock() : rw.writeLock();
}

/** The holder object an acquire or release of `step.type` goes through. */
function holder(actor: Actor, step: Step): any {
  switch (step.type) {
    case 'lock':
      return actor.handle('lock', step.key, step, (o) => new Mutex(actor.client, step.key, o));
    case 'read':
    case 'write':
      return side(actor, step);
    case 'semaphore':
      // The runner never lets an acquire create the semaphore; set_permits does.
      return actor.handle('semaphore', step.key, step, (o) => Semaphore.ofPermitsSetElsewhere(actor.client, step.key, o));
    default:
      throw new Kind('Unsupported', `type ${step.type}`);
  }
}

function semaphore(actor: Actor, step: Step): Semaphore {
  return holder(actor, { ...step, type: 'semaphore' });
}

function latch(actor: Actor, step: Step): CountDownLatch {
  return actor.handle('latch', step.key, step, () => new CountDownLatch(actor.client, step.key));
}

function multi(actor: Actor, step: Step): MultiLock {
  const id = `multilock:${step.keys.join(',')}`;
  return actor.handle(
    'multilock',
    step.keys.join(','),
    step,
    (o) =>
      new MultiLock(actor.client, step.keys, {
        ...o,
        onLockLost: () => actor.reportLost(id),
      }),
  );
}

function election(actor: Actor, step: Step): Election {
  return actor.handle('election', step.key, step, () => {
    const e = new Election(actor.client, step.key, step.candidate ?? actor.owner);
    e.onLost = () => actor.lost.add(`election:${step.key}`);
    return e;
  });
}

/** The wait of a step: one attempt (acquireTimeout 0) or up to `wait_ms`. */
function wait(step: Step, signal: AbortSignal): { acquireTimeout: number; signal: AbortSignal } {
  return { acquireTimeout: step.wait_ms ?? 0, signal };
}

type Op = (actor: Actor, step: Step, signal: AbortSignal) => Promise<unknown>;

export const ACTOR_OPS: Record<string, Op> = {
  async acquire(actor, step, signal) {
    const h = holder(actor, step);
    if (step.type === 'semaphore') await h.acquire(step.permits ?? 1, wait(step, signal));
    else await h.acquire(wait(step, signal));
    return h.token;
  },
  async release(actor, step) {
    // The helper gives back what the latest acquire took; a different count is not expressible.
    const h = holder(actor, step);
    // A holding that was lost: release() resolves (redis-semaphore's) and the loss is told by
    // onLockLost, before (the object no longer counts as acquired) or during this release.
    const id = `${step.type}:${step.key}`;
    const wasAcquired = h.isAcquired;
    const told = actor.losses.get(id) ?? 0;
    await h.release();
    if (!wasAcquired || (actor.losses.get(id) ?? 0) > told)
      throw new Kind('NotHeld', 'the release found the holding lost (told by onLockLost)');
    return null;
  },
  guard: (actor, step) => holder(actor, { ...step, type: 'lock' }).guard(...(step.command as [string, ...string[]])),
  set_permits: (actor, step) => semaphore(actor, step).trySetPermits(step.permits),
  add_permits: (actor, step) => semaphore(actor, step).addPermits(step.permits),
  available_permits: (actor, step) => semaphore(actor, step).available(),
  set_count: (actor, step) => latch(actor, step).trySetCount(step.count),
  async count_down(actor, step) {
    await latch(actor, step).countDown();
    return null;
  },
  get_count: (actor, step) => latch(actor, step).getCount(),
  await_latch: (actor, step, signal) => latch(actor, step).wait(step.wait_ms, { signal }),
  async acquire_all(actor, step, signal) {
    const m = multi(actor, step);
    await m.acquire(wait(step, signal));
    return m.tokens;
  },
  async release_all(actor, step) {
    await multi(actor, step).release();
    return null;
  },
  campaign(actor, step, signal) {
    // Election.campaign has no wait of its own: the spec's wait_ms is a timeout signal.
    const timeout = AbortSignal.timeout(step.wait_ms);
    return election(actor, step)
      .campaign({ signal: AbortSignal.any([signal, timeout]) })
      .catch((err) => {
        if (timeout.aborted) throw new Kind('NotAcquired');
        throw err;
      });
  },
  async leader(actor, step) {
    const leader = await election(actor, step).leader();
    return leader && { owner: leader.owner, term: leader.term };
  },
  async resign(actor, step) {
    await election(actor, step).resign();
    return null;
  },
};

/** The handle key of an await_lost step (the one its holder's loss callback marks). */
export function lostKey(step: Step): string {
  if (step.type === 'multilock') return `multilock:${step.keys.join(',')}`;
  return `${step.type}:${step.key}`;
}
