/**
 * What every failover test checks, through the public API: a confirmed holder and a waiter told
 * by message (NOTIFY: the Node helper has no blocked waiter) across a failover. The holder keeps
 * its lock on the new primary (re-bound) or is told it lost it; the waiter re-joins the new
 * primary's queue and is served after the holder with a larger token; a fenced resource never
 * accepts two holders.
 */

import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { Mutex } from '../src';
import { info, until } from './support';

/** A resource that refuses a fencing token lower than the highest it saw. */
export class Fence {
  highest = 0;
  readonly accepted: number[] = [];
  write(token: number | null): boolean {
    if (token === null || token < this.highest) return false;
    this.highest = token;
    this.accepted.push(token);
    return true;
  }
}

/**
 * `admin()` is a connection to the primary that serves `key` now (after `event` too);
 * `event` fails the primary over (and resolves once everyone agrees on the new one).
 */
export async function holderAndWaiterAcross(
  client: unknown,
  key: string,
  admin: () => Promise<Redis>,
  event: () => Promise<void>,
): Promise<void> {
  const fence = new Fence();
  const lost: string[] = [];
  const a = new Mutex(client, key, { onLockLost: (err) => lost.push(err.message) });
  await a.acquire();
  const tokenA = a.token!;
  assert.ok(fence.write(tokenA));
  const b = new Mutex(client, key);
  const granted = b.acquire().then(() => b.token!);
  granted.catch(() => {});
  let before = await admin();
  await until(async () => Number((await info(before, 'RLOCK.INFO', key))?.waiters) === 1, 10_000, 'the waiter queued');
  before.disconnect();

  await event();

  const after = await admin();
  try {
    // The holder re-binds on the new primary (or is told it lost it); the waiter queues there again.
    const state = await until(async () => {
      if (lost.length) return 'lost';
      const now = await info(after, 'RLOCK.INFO', key).catch(() => null);
      return now && String(now.owner) === a.identifier && Number(now.waiters) === 1 ? 'held' : null;
    }, 20_000, 'the holder re-bound and the waiter queued on the new primary');
    if (state === 'held') {
      assert.equal(a.isAcquired, true);
      assert.equal(a.token, tokenA);
      assert.equal(b.isAcquired, false, 'one holder');
      assert.ok(fence.write(a.token), 'the holder still writes');
      await a.release();
    } else {
      assert.equal(a.isAcquired, false, 'told it lost the lock');
    }
    const tokenB = await granted;
    assert.ok(tokenB > tokenA, `tokens rise: ${tokenB} after ${tokenA}`);
    assert.ok(fence.write(tokenB), 'the next holder is accepted');
    assert.equal(fence.write(tokenA), false, 'the old holder is refused');
    assert.equal(a.isAcquired, false);
    assert.equal(String((await info(after, 'RLOCK.INFO', key))!.owner), b.identifier);
    await b.release();
    assert.deepEqual(lost, state === 'held' ? [] : lost);
  } finally {
    after.disconnect();
  }
}
