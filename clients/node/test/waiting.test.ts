import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Mutex } from '../src';
import { LIBS, fixture, info, infoField, rlockClientIds, until } from './support';

const WAITS = 1000;

for (const lib of LIBS) {
  describe(`${WAITS} waits with ${lib}`, () => {
    const f = fixture(lib, 'waiting');

    it(`${WAITS} concurrent acquire() hold no blocked connection and cost under 1 KB of server memory each`, async (t) => {
      const key = `many:${lib}`;
      const holder = new Mutex(f.clients[0], key);
      await holder.acquire();
      // Warm up: the subscriber exists before the measurement.
      const first = new Mutex(f.clients[0], key, { acquireTimeout: 1 });
      await assert.rejects(first.acquire());
      const before = await infoField(f.redis, 'memory', 'used_memory');
      const clientsBefore = await infoField(f.redis, 'clients', 'connected_clients');

      const order: number[] = [];
      const waits = Array.from({ length: WAITS }, (_, i) => {
        const m = new Mutex(f.clients[0], key);
        return m.acquire().then(async () => {
          order.push(i);
          await m.release();
        });
      });
      await until(async () => (await info(f.redis, 'RLOCK.INFO', key))!.waiters === WAITS, 20_000, 'all queued');
      assert.equal(await infoField(f.redis, 'clients', 'blocked_clients'), 0);
      assert.equal(await infoField(f.redis, 'clients', 'connected_clients'), clientsBefore, 'no connection per wait');
      assert.equal((await rlockClientIds(f.redis)).length, 2, 'one command connection and one subscriber');
      const perWait = ((await infoField(f.redis, 'memory', 'used_memory')) - before) / WAITS;
      t.diagnostic(`${perWait.toFixed(0)} bytes of server memory per wait`);
      assert.ok(perWait < 1024, `${perWait.toFixed(0)} bytes of server memory per wait`);

      await holder.release();
      await Promise.all(waits);
      assert.equal(order.length, WAITS);
      assert.deepEqual(
        order,
        [...order].sort((a, b) => a - b),
        'granted in the order they queued',
      );
      assert.equal(await info(f.redis, 'RLOCK.INFO', key), null);
      assert.equal(await infoField(f.redis, 'clients', 'blocked_clients'), 0);
    });
  });
}
