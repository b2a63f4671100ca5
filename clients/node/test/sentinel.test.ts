/**
 * Sentinel (the harness's `sentinel` topology, started once for the file), with ioredis
 * `new Redis({ sentinels, name })` and node-redis `createSentinel()`: rlock finds the primary
 * through the sentinels and confirms with its replica; across `SENTINEL FAILOVER` and then
 * kill -9 of the primary (and promotion) every type's holder keeps its holding (re-bound on the
 * new primary), its waiter re-joins the new queue and is served after it, an observer follows.
 * Both libraries go through each failover at once: the topology has one replica, so one kill.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { createSentinel } from 'redis';
import { Mutex, Semaphore } from '../src';
import { unhandled, until } from './support';
import { everyTypeAcross } from './failover';
import { Topology } from './topology';

let topology: Topology;
const clients: Record<string, any> = {};

const CLIENTS: Record<string, () => Promise<any>> = {
  ioredis: async () => {
    const client = new Redis({ sentinels: topology.described.sentinels, name: topology.described.master_name, lazyConnect: true });
    client.on('error', () => {});
    await client.connect();
    return client;
  },
  'node-redis': async () => {
    const client = createSentinel({ name: topology.described.master_name!, sentinelRootNodes: topology.described.sentinels });
    client.on('error', () => {});
    await client.connect();
    return client;
  },
};

before(async () => {
  topology = await Topology.start('sentinel');
  for (const [lib, connect] of Object.entries(CLIENTS)) {
    clients[lib] = await connect();
    // Keyspace events for the observers, on every data node (a replica promoted keeps them).
    const nodes = [topology.described.primary!, ...topology.described.replicas];
    for (const { host, port } of nodes) {
      const admin = new Redis({ host, port });
      await admin.call('CONFIG', 'SET', 'notify-keyspace-events', 'Kdgx');
      admin.disconnect();
    }
  }
});

after(async () => {
  for (const client of Object.values(clients)) {
    if (typeof client.disconnect === 'function') client.disconnect();
    else await client.destroy();
  }
  await topology?.stop();
  assert.deepEqual(unhandled, []);
});

function primaryAdmin(): Promise<Redis> {
  const { host, port } = topology.described.primary!;
  return Promise.resolve(new Redis({ host, port }));
}

for (const lib of Object.keys(CLIENTS)) {
  describe(`Sentinel with ${lib}`, () => {
    it('locks through the sentinels, confirmed by the replica', async () => {
      const replica = topology.described.replicas[0];
      const check = new Redis({ host: replica.host, port: replica.port });
      try {
        const mutex = new Mutex(clients[lib], `sentinel:${lib}:m`);
        await mutex.acquire();
        assert.equal(await check.exists(`sentinel:${lib}:m`), 1, 'on the replica when acquire resolves');
        await mutex.release();
        const sem = new Semaphore(clients[lib], `sentinel:${lib}:s`, 2);
        await sem.acquire(2);
        await sem.release();
      } finally {
        check.disconnect();
      }
    });
  });
}

it('node-redis: closing a createSentinel() client ends the holdings made with it (it emits no end)', async () => {
  const client = await CLIENTS['node-redis']();
  const lost: string[] = [];
  const mutex = new Mutex(client, 'sentinel:node-redis:closed', { onLockLost: (err) => lost.push(err.message) });
  await mutex.acquire();
  await client.destroy();
  await until(() => lost.length > 0, 5000, 'the holding reported lost');
  assert.match(lost[0], /the client was closed/);
  assert.equal(mutex.isAcquired, false);
});

describe('Sentinel failovers, both libraries at once, every type', () => {
  it(
    'across SENTINEL FAILOVER: holders keep their holdings, waiters are served after them, tokens rise',
    { timeout: 90_000 },
    async (t) => {
      t.diagnostic(
        await everyTypeAcross(
          clients,
          (lib) => `sentinel:${lib}:failover`,
          primaryAdmin,
          async () => {
            await topology.failover();
          },
        ),
      );
    },
  );

  it('across kill -9 of the primary and promotion: the same', { timeout: 90_000 }, async (t) => {
    t.diagnostic(
      await everyTypeAcross(
        clients,
        (lib) => `sentinel:${lib}:kill`,
        primaryAdmin,
        async () => {
          await topology.kill(topology.described.primary!.port);
          await topology.awaitPromotion();
        },
      ),
    );
  });
});
