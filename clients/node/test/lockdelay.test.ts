import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LockLostError, Mutex } from '../src';
import { LIBS, fixture, info, until } from './support';

for (const lib of LIBS) {
  describe(`lockDelay with ${lib}`, () => {
    const f = fixture(lib, 'delay', { clients: 2 });

    /** Queues a waiter on the other client; resolves with performance.now() at its grant. */
    async function queued(k: string): Promise<{ waiter: Mutex; granted: Promise<number> }> {
      const waiter = new Mutex(f.clients[1], k, { acquireTimeout: 5000 });
      const granted = waiter.acquire().then(() => performance.now());
      await until(async () => (await info(f.redis, 'RLOCK.INFO', k))!.waiters === 1, 5000, 'queued');
      return { waiter, granted };
    }

    it('a lease that ends under lockDelay grants the next waiter no sooner than the delay after it', async (t) => {
      const k = f.key();
      const lost: LockLostError[] = [];
      const holder = new Mutex(f.clients[0], k, { lockTimeout: 150, refreshInterval: 0, lockDelay: 400, onLockLost: (e) => lost.push(e) });
      const before = performance.now(); // the lease starts after this, so it ends at before + 150 or later
      await holder.acquire();
      const { waiter, granted } = await queued(k);
      // The lease ends 150 ms after the acquire; the delay runs from then. Polled, not slept:
      // on a loaded machine the acquire and the queueing can take longer than the lease.
      let delayed = await info(f.redis, 'RLOCK.INFO', k);
      await until(async () => (delayed = await info(f.redis, 'RLOCK.INFO', k))!.owner === null, 2000, 'the lease over');
      assert.equal(delayed!.lockdelay, 400);
      assert.equal(delayed!.waiters, 1, 'the waiter keeps its place');
      const after = (await granted) - before;
      t.diagnostic(`granted ${after.toFixed(1)} ms after the acquire (lease 150 + delay 400)`);
      assert.ok(after >= 549, `granted ${after.toFixed(1)} ms after the acquire: sooner than lease + delay`);
      assert.ok(after < 3000, `granted ${after.toFixed(1)} ms after the acquire`);
      await until(() => lost.length === 1, 2000, 'the old holder told of its loss');
      await holder.release(); // resolves after a loss, as redis-semaphore's; told once
      assert.equal(lost.length, 1);
      await waiter.release();
    });

    it('a watchdog holding whose connection closes under lockDelay: the waiter waits the delay, the holder learns of the loss', async (t) => {
      const k = f.key();
      const lost: LockLostError[] = [];
      const holder = new Mutex(f.clients[0], k, { lockDelay: 300, onLockLost: (e) => lost.push(e) });
      await holder.acquire();
      const { waiter, granted } = await queued(k);
      const bound = (await info(f.redis, 'RLOCK.INFO', k))!.watchdog;
      const killed = performance.now();
      await f.redis.client('KILL', 'ID', String(bound));
      // Its re-bind from a new connection finds the lease over: lost.
      await until(() => lost.length === 1, 2000, 'the holder told of its loss');
      assert.equal(holder.isAcquired, false);
      const after = (await granted) - killed;
      t.diagnostic(`granted ${after.toFixed(1)} ms after the kill (delay 300)`);
      assert.ok(after >= 299 && after < 700, `granted ${after.toFixed(1)} ms after the kill`);
      assert.equal((await info(f.redis, 'RLOCK.INFO', k))!.owner, waiter.identifier);
      await waiter.release();
    });

    it("the owner's release skips the delay: the next waiter is granted at once", async () => {
      const k = f.key();
      const holder = new Mutex(f.clients[0], k, { lockDelay: 5000 });
      await holder.acquire();
      const { waiter, granted } = await queued(k);
      const released = performance.now();
      await holder.release();
      const after = (await granted) - released;
      assert.ok(after < 2000, `granted ${after.toFixed(1)} ms after the release (the delay is 5 s)`);
      await waiter.release();
      assert.throws(() => new Mutex(f.clients[0], k, { lockDelay: 0 }), RangeError);
    });
  });
}
