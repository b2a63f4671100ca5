import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeadlockError, Mutex, ReadWriteLock, RLockError } from '../src';
import { LIBS, fixture, info, until } from './support';

for (const lib of LIBS) {
  describe(`deadlock detection with ${lib}`, () => {
    const f = fixture(lib, 'deadlock', { clients: 2 });

    /**
     * The wait that closes the cycle is refused when it is made, not at its 5 s timeout: only the
     * call's own reply carries DEADLOCK (a queued wait could only end by grant or timeout). The
     * bound is far from both 0 and the timeout so that a loaded machine cannot fail it (10 ms
     * did, at 14.7 ms under a load average of 20).
     */
    async function refusedAtOnce(closing: Promise<void>, t: { diagnostic(m: string): void }, started: number) {
      let caught: unknown;
      await closing.catch((err) => (caught = err));
      const took = performance.now() - started;
      t.diagnostic(`DeadlockError after ${took.toFixed(2)} ms`);
      assert.ok(caught instanceof DeadlockError, `a DeadlockError, got ${caught}`);
      assert.ok(caught instanceof RLockError);
      assert.equal(caught.code, 'ERR_RLOCK_DEADLOCK');
      assert.match(caught.message, /^DEADLOCK this wait would close a cycle: /);
      assert.ok(took < 1000, `refused after ${took.toFixed(2)} ms, not at once`);
      return caught;
    }

    it('two owners nesting two Mutexes in opposite orders: the second wait gets DeadlockError at once', async (t) => {
      const [a, b] = [f.key('a'), f.key('b')];
      const o1 = { identifier: `o1:${lib}`, acquireTimeout: 5000 };
      const o2 = { identifier: `o2:${lib}`, acquireTimeout: 5000 };
      const o1a = new Mutex(f.clients[0], a, o1);
      const o1b = new Mutex(f.clients[0], b, o1);
      const o2b = new Mutex(f.clients[1], b, o2);
      const o2a = new Mutex(f.clients[1], a, o2);
      await o1a.acquire();
      await o2b.acquire();
      const o1Waits = o1b.acquire(); // o1 holds a, waits for b
      await until(async () => (await info(f.redis, 'RLOCK.INFO', b))!.waiters === 1, 5000, 'o1 queued on b');
      const started = performance.now();
      const err = await refusedAtOnce(o2a.acquire(), t, started); // o2 holds b, asks for a
      assert.ok(err.message.includes(o1.identifier) && err.message.includes(o2.identifier), err.message);
      assert.equal(o2a.isAcquired, false);
      assert.equal((await info(f.redis, 'RLOCK.INFO', a))!.waiters, 0, 'the refused wait was not queued');
      assert.equal((await info(f.redis, 'RLOCK.INFO', b))!.waiters, 1, 'o1 keeps waiting');
      // o2 backs off: o1 gets b and finishes.
      await o2b.release();
      await o1Waits;
      assert.equal((await info(f.redis, 'RLOCK.INFO', b))!.owner, o1.identifier);
      await o1b.release();
      await o1a.release();
      // Nothing is left over: o2 now takes both in o1's order.
      await o2a.acquire();
      await o2b.acquire();
      await o2b.release();
      await o2a.release();
    });

    it('two objects on one key with one identifier re-enter each other (one owner)', async () => {
      const k = f.key('one');
      const first = new Mutex(f.clients[0], k, { identifier: `same:${lib}` });
      const second = new Mutex(f.clients[1], k, { identifier: `same:${lib}` });
      await first.acquire();
      assert.equal(await second.tryAcquire(), true);
      assert.equal(second.token, first.token);
      assert.equal((await info(f.redis, 'RLOCK.INFO', k))!.holds, 2);
      await second.release();
      await first.release();
      assert.equal(await info(f.redis, 'RLOCK.INFO', k), null);
      assert.throws(() => new Mutex(f.clients[0], k, { identifier: '' }), TypeError);
      assert.throws(() => new Mutex(f.clients[0], k, { identifier: 'rlock:x' }), TypeError);
    });

    it('ReadWriteLocks: a reader asking for what a waiting writer holds gets DeadlockError', async (t) => {
      const [x, y] = [f.key('x'), f.key('y')];
      const o1 = { identifier: `rw1:${lib}`, acquireTimeout: 5000 };
      const o2 = { identifier: `rw2:${lib}`, acquireTimeout: 5000 };
      const o1x = new ReadWriteLock(f.clients[0], x, o1);
      const o1y = new ReadWriteLock(f.clients[0], y, o1);
      const o2y = new ReadWriteLock(f.clients[1], y, o2);
      const o2x = new ReadWriteLock(f.clients[1], x, o2);
      assert.equal(o1x.owner, o1.identifier);
      await o1x.writeLock().acquire();
      await o2y.readLock().acquire();
      const o1Waits = o1y.writeLock().acquire(); // o1 writes x, waits to write y (read by o2)
      await until(async () => (await info(f.redis, 'RWLOCK.INFO', y))!.waiting_writers === 1, 5000, 'o1 queued on y');
      const started = performance.now();
      await refusedAtOnce(o2x.readLock().acquire(), t, started); // o2 reads y, asks to read x
      await o2y.readLock().release();
      await o1Waits;
      await o1y.writeLock().release();
      await o1x.writeLock().release();
    });

    it('a cycle through a Mutex and a ReadWriteLock is seen too', async (t) => {
      const [m, w] = [f.key('m'), f.key('w')];
      const o1 = { identifier: `mix1:${lib}` };
      const o2 = { identifier: `mix2:${lib}` };
      const o1m = new Mutex(f.clients[0], m, o1);
      const o2w = new ReadWriteLock(f.clients[1], w, o2).writeLock();
      await o1m.acquire();
      await o2w.acquire();
      const o1Waits = new ReadWriteLock(f.clients[0], w, o1).readLock();
      const waiting = o1Waits.acquire();
      await until(async () => (await info(f.redis, 'RWLOCK.INFO', w))!.waiting_readers === 1, 5000, 'o1 queued on w');
      const started = performance.now();
      await refusedAtOnce(new Mutex(f.clients[1], m, o2).acquire(), t, started);
      await o2w.release();
      await waiting;
      await o1Waits.release();
      await o1m.release();
    });
  });
}
