import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CountDownLatch, LockTimeoutError, ReadWriteLock, Semaphore, WrongTypeError } from '../src';
import { LIBS, fixture, info, sleep, until } from './support';

for (const lib of LIBS) {
  describe(`Semaphore, ReadWriteLock and CountDownLatch with ${lib}`, () => {
    const f = fixture(lib, 'types');

    it('Semaphore: limit permits, owned; a waiter for 2 is served when 2 are free, before a later one', async () => {
      const k = f.key('sem');
      const a = new Semaphore(f.clients[0], k, 3);
      const b = new Semaphore(f.clients[0], k, 3);
      const c = new Semaphore(f.clients[0], k, 3);
      await a.acquire(2);
      const aToken = a.token!;
      assert.equal(typeof aToken, 'number');
      assert.equal(await b.tryAcquire(2), false);
      await b.acquire(1);
      assert.equal(await a.available(), 0);
      const order: string[] = [];
      const big = c.acquire(2).then(() => order.push('c2'));
      await until(async () => ((await f.redis.call('RSEM.INFO', k)) as any[])[5].length === 1, 5000, 'c queued');
      const small = new Semaphore(f.clients[0], k, 3);
      const later = small.acquire(1).then(() => order.push('small1'));
      await sleep(30);
      assert.deepEqual(order, []);
      await b.release(); // 1 free: c (2) still does not fit, and small may not pass it
      await sleep(30);
      assert.deepEqual(order, []);
      await a.release(); // 3 free: c takes 2, then small takes 1
      await Promise.all([big, later]);
      assert.deepEqual(order, ['c2', 'small1']);
      assert.ok(c.token! > aToken, 'a later grant has a larger token');
      await c.release();
      await small.release();
      assert.equal(await c.available(), 3);
    });

    it('Semaphore: re-acquire on one object adds up, release gives back the latest acquire; acquireTimeout', async () => {
      const k = f.key('sem');
      const s = new Semaphore(f.clients[0], k, 2, { acquireTimeout: 80 });
      await s.acquire();
      await s.acquire();
      assert.equal(await s.available(), 0);
      await assert.rejects(new Semaphore(f.clients[0], k, 2, { acquireTimeout: 80 }).acquire(), LockTimeoutError);
      await s.release();
      assert.equal(await s.available(), 1);
      const result = await new Semaphore(f.clients[0], k, 2).using(async () => s.available());
      assert.equal(result, 0);
      await s.release();
      assert.equal(await s.available(), 2);
    });

    it('ReadWriteLock: using on each side; a plain lock key is WRONGTYPE', async () => {
      const k = f.key('rw');
      const rw = new ReadWriteLock(f.clients[0], k);
      assert.equal(await rw.writeLock().using(async () => (await info(f.redis, 'RWLOCK.INFO', k))!.mode), 'write');
      assert.equal(await rw.readLock().using(async () => (await info(f.redis, 'RWLOCK.INFO', k))!.mode), 'read');
      await f.redis.call('RLOCK.ACQUIRE', k, 'someone', 'PX', 10000);
      await assert.rejects(rw.readLock().tryAcquire(), WrongTypeError);
    });

    // What a latch does is clients/spec/latch.json; what is Node's own is countDown's reply.
    it('CountDownLatch: countDown resolves with the count left', async () => {
      const latch = new CountDownLatch(f.clients[0], f.key('latch'));
      assert.equal(await latch.trySetCount(2), true);
      assert.equal(await latch.countDown(), 1);
      assert.equal(await latch.countDown(), 0);
      assert.equal(await latch.countDown(), 0, 'an open latch stays at 0');
    });

    it('CountDownLatch: wait is cancelled by an AbortSignal; the others still open', async () => {
      const k = f.key('latch');
      const latch = new CountDownLatch(f.clients[0], k);
      await latch.trySetCount(1);
      const controller = new AbortController();
      const aborted = latch.wait(undefined, { signal: controller.signal });
      const kept = latch.wait(5000);
      await sleep(20);
      controller.abort();
      await assert.rejects(aborted, (err: any) => err.name === 'AbortError');
      await latch.countDown();
      assert.equal(await kept, true);
    });
  });
}
