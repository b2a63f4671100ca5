/**
 * A Cluster slot migrated (`CLUSTER SETSLOT ... IMPORTING/MIGRATING`, `MIGRATE`, then
 * `SETSLOT ... NODE`) under a watchdog holder and a waiter told by message, with ioredis
 * `Redis.Cluster` and node-redis `createCluster` at once: while the slot moves, the waiter is
 * told `failed ASK` and queues again on the target (after `ASKING`), the holder is re-bound
 * there and its guard runs there (one on a key that is not there yet is answered `TRYAGAIN`,
 * sent again, and runs once the slot moved); once the slot moved (`MOVED`), the holder releases, the
 * waiter is served with a larger token, and the old holder's guard is refused.
 */

import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import Redis from 'ioredis';
import { createCluster } from 'redis';
import { Mutex } from '../src';
import { keySlot } from '../src/slot';
import { info, infoField, unhandled, until } from './support';
import { Topology } from './topology';

let topology: Topology;
const clients: Record<string, any> = {};

before(async () => {
  topology = await Topology.start('cluster');
  const primaries = topology.described.nodes.filter((n) => n.role === 'primary').map(({ host, port }) => ({ host, port }));
  const ioredis = new Redis.Cluster(primaries, { lazyConnect: true });
  ioredis.on('error', () => {});
  await ioredis.connect();
  clients.ioredis = ioredis;
  const nodeRedis = createCluster({ rootNodes: primaries.map((socket) => ({ socket })) });
  nodeRedis.on('error', () => {});
  await nodeRedis.connect();
  clients['node-redis'] = nodeRedis;
});

after(async () => {
  clients.ioredis?.disconnect();
  await clients['node-redis']?.destroy();
  await topology?.stop();
  assert.deepEqual(unhandled, []);
});

/** `command` on `redis` right after `ASKING`: what the importing node holds for the slot. */
async function asking(redis: Redis, ...command: Array<string | number>): Promise<unknown> {
  await redis.call('ASKING');
  return redis.call(String(command[0]), ...command.slice(1));
}

it('a holder and a waiter follow their slot through a migration: ASK while it moves, MOVED after', { timeout: 60_000 }, async () => {
  const keyOf = (lib: string) => `{migrating}:${lib}`;
  const slot = keySlot(keyOf(''));
  const primaries = topology.described.nodes.filter((n) => n.role === 'primary');
  const source = primaries.find((n) => n.slots!.some(([a, b]) => a <= slot && slot <= b))!;
  const target = primaries.find((n) => n !== source)!;
  const from = new Redis({ host: source.host, port: source.port });
  const to = new Redis({ host: target.host, port: target.port });
  try {
    const libs = Object.keys(clients);
    const lost: string[] = [];
    const holders = libs.map((lib) => new Mutex(clients[lib], keyOf(lib), { onLockLost: (err) => lost.push(err.message) }));
    await Promise.all(holders.map((holder) => holder.acquire()));
    const tokens = holders.map((holder) => holder.token!);
    const data = (lib: string) => `{migrating}:data:${lib}`;
    for (const [i, lib] of libs.entries()) assert.equal(await holders[i].guard('SET', data(lib), 'before'), 'OK');
    const waiters = libs.map((lib) => new Mutex(clients[lib], keyOf(lib)));
    const served = waiters.map((waiter) => waiter.acquire().then(() => waiter.token!));
    served.forEach((promise) => promise.catch(() => {}));
    await until(
      async () => (await infoField(from, 'rlock', 'rlock_notified_waiters')) === libs.length,
      10_000,
      'the waiters queued on the source',
    );

    assert.equal(await to.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id!), 'OK');
    assert.equal(await from.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id!), 'OK');
    assert.equal(await from.call('MIGRATE', target.host, target.port, '', 0, 5000, 'KEYS', ...libs.map(keyOf), ...libs.map(data)), 'OK');

    // While it moves: each holding bound on the target again, each waiter queued there.
    for (const [i, lib] of libs.entries()) {
      await until(
        async () => {
          await to.call('ASKING');
          const state = await info(to, 'RLOCK.INFO', keyOf(lib));
          return state && String(state.owner) === holders[i].identifier && state.watchdog !== null && Number(state.waiters) === 1;
        },
        10_000,
        `${lib}'s holder re-bound and its waiter queued on the target`,
      );
      assert.equal(await holders[i].guard('SET', data(lib), 'during'), 'OK', 'the guard runs on the target (ASK)');
      assert.equal(await asking(to, 'GET', data(lib)), 'during');
    }
    // A key not migrated yet: the target answers TRYAGAIN until the slot is its own.
    const pending = holders[0].guard('SET', '{migrating}:new', 'after the move');
    pending.catch(() => {});
    assert.equal(await infoField(from, 'rlock', 'rlock_notified_waiters'), 0, 'nothing waits on the source');
    assert.equal(await from.call('CLUSTER', 'COUNTKEYSINSLOT', slot), 0, 'no copy left on the source');

    for (const node of [target, source, ...primaries.filter((n) => n !== source && n !== target)]) {
      const admin = new Redis({ host: node.host, port: node.port });
      await admin.call('CLUSTER', 'SETSLOT', slot, 'NODE', target.id!);
      admin.disconnect();
    }

    assert.equal(await pending, 'OK');
    assert.equal(await to.call('GET', '{migrating}:new'), 'after the move');

    // Moved: released there (MOVED followed), the waiters served with larger tokens.
    for (const [i, holder] of holders.entries()) {
      await holder.release();
      const token = await served[i];
      assert.ok(token > tokens[i], `tokens rise: ${token} after ${tokens[i]}`);
      assert.equal(String((await info(to, 'RLOCK.INFO', keyOf(libs[i])))!.owner), waiters[i].identifier);
      assert.equal(await waiters[i].guard('SET', data(libs[i]), 'after'), 'OK');
      await assert.rejects(holder.guard('SET', data(libs[i]), 'stale'));
      await waiters[i].release();
      const again = new Mutex(clients[libs[i]], keyOf(libs[i]));
      await again.acquire();
      assert.ok(again.token! > token);
      await again.release();
    }
    assert.deepEqual(lost, []);
  } finally {
    from.disconnect();
    to.disconnect();
  }
});
