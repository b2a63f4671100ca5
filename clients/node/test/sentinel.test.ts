/**
 * Sentinel (the harness's `sentinel` topology, started once for the file): rlock on a user's
 * Sentinel client finds the primary through the sentinels, confirms with its replica, and
 * across `SENTINEL FAILOVER` and kill -9 of the primary (then promotion) its holder keeps the
 * lock (re-bound on the new primary), its waiter re-joins the new queue and is served after it.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { createSentinel } from 'redis';
import { Mutex, Semaphore } from '../src';
import { unhandled } from './support';
import { holderAndWaiterAcross } from './failover';
import { Topology } from './topology';

let topology: Topology;

before(async () => {
  topology = await Topology.start('sentinel');
});

after(async () => {
  await topology?.stop();
  assert.deepEqual(unhandled, []);
});

function primaryAdmin(): Promise<Redis> {
  const { host, port } = topology.described.primary!;
  return Promise.resolve(new Redis({ host, port }));
}

const CLIENTS: Record<string, () => Promise<any>> = {
  ioredis: async () => {
    const client = new Redis({ sentinels: topology.described.sentinels, name: topology.described.master_name, lazyConnect: true });
    client.on('error', () => {});
    await client.connect();
    return client;
  },
};

it('node-redis createSentinel() is refused with a clear error (use ioredis, or a client of the primary)', () => {
  const sentinel = createSentinel({ name: topology.described.master_name!, sentinelRootNodes: topology.described.sentinels });
  assert.throws(() => new Mutex(sentinel, 'k'), (err: unknown) => err instanceof TypeError && /createSentinel\(\) client is not supported/.test(err.message));
});

for (const [lib, connect] of Object.entries(CLIENTS)) {
  describe(`Sentinel with ${lib}`, () => {
    let client: any;
    before(async () => {
      client = await connect();
    });
    after(() => client?.disconnect?.() ?? client?.destroy?.());

    it('locks through the sentinels, confirmed by the replica', async () => {
      const replica = topology.described.replicas[0];
      const check = new Redis({ host: replica.host, port: replica.port });
      try {
        const mutex = new Mutex(client, `sentinel:${lib}:m`);
        await mutex.acquire();
        assert.equal(await check.exists(`sentinel:${lib}:m`), 1, 'on the replica when acquire resolves');
        await mutex.release();
        const sem = new Semaphore(client, `sentinel:${lib}:s`, 2);
        await sem.acquire(2);
        await sem.release();
      } finally {
        check.disconnect();
      }
    });

    it('across SENTINEL FAILOVER: the holder keeps its lock, the waiter is served after it', async () => {
      await holderAndWaiterAcross(client, `sentinel:${lib}:failover`, primaryAdmin, async () => {
        await topology.failover();
      });
    });

    it('across kill -9 of the primary and promotion: the same', async () => {
      await holderAndWaiterAcross(client, `sentinel:${lib}:kill`, primaryAdmin, async () => {
        await topology.kill(topology.described.primary!.port);
        await topology.awaitPromotion();
      });
    });
  });
}
