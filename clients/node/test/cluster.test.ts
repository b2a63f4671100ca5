/**
 * Redis Cluster (the harness's `cluster` topology: three primaries with a replica each, started
 * once for the file), with ioredis `Redis.Cluster` and node-redis `createCluster`: every type
 * works on keys of every node (a MultiLock with a hash tag; without one, a clear error), and
 * across `CLUSTER FAILOVER` and kill -9 of a primary (then promotion) every type's holder keeps
 * its holding, its waiter re-joins the new primary's queue and is served after it, an observer
 * follows. Both libraries go through each failover at once (one event a shard).
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { createCluster } from 'redis';
import { CountDownLatch, Election, MultiLock, Mutex, ReadWriteLock, RLockError, Semaphore } from '../src';
import { keySlot } from '../src/slot';
import { record, unhandled, until } from './support';
import { everyTypeAcross } from './failover';
import { Node, Topology } from './topology';

let topology: Topology;
const clients: Record<string, any> = {};

before(async () => {
  topology = await Topology.start('cluster');
  for (const node of topology.described.nodes) {
    const admin = new Redis({ host: node.host, port: node.port });
    await admin.call('CONFIG', 'SET', 'notify-keyspace-events', 'Kdgx');
    admin.disconnect();
  }
  for (const [lib, connect] of Object.entries(CLIENTS)) clients[lib] = await within(connect(), `${lib} cluster client connected`);
});

after(async () => {
  clients.ioredis?.disconnect();
  // destroy, not close: after a node was killed -9, node-redis's close() can wait forever for
  // replies that node will never send (seen once in 3 runs of the whole suite).
  await within(Promise.resolve(clients['node-redis']?.destroy()), 'node-redis cluster client destroyed');
  await topology?.stop();
  assert.deepEqual(unhandled, []);
});

/** `promise`, or a failure after 30 s (a hook has no timeout of its own). */
function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within 30 s`)), 30_000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** A connection to the primary serving `key` now. */
async function primaryFor(key: string): Promise<Redis> {
  const slot = keySlot(key);
  const node = topology.described.nodes.find((n) => n.role === 'primary' && n.slots!.some(([a, b]) => a <= slot && slot <= b));
  if (!node) throw new Error(`no primary for slot ${slot}`);
  return new Redis({ host: node.host, port: node.port });
}

/** A key served by a primary that has a replica now (every kill leaves its shard without one). */
function keyWithReplica(prefix: string): string {
  const { nodes } = topology.described;
  const primary = nodes.find((n) => n.role === 'primary' && nodes.some((r) => r.role === 'replica' && r.primary_id === n.id))!;
  return keyOn(primary, prefix);
}

/** `<prefix>:<n>`, a key of `primary`'s slots. */
function keyOn(primary: Node, prefix: string): string {
  for (let i = 0; ; i++) {
    const key = `${prefix}:${i}`;
    const slot = keySlot(key);
    if (primary.slots!.some(([a, b]) => a <= slot && slot <= b)) return key;
  }
}

/** Keys whose slots are served by three different primaries. */
function keysOnEveryPrimary(prefix: string): string[] {
  const primaries = topology.described.nodes.filter((n) => n.role === 'primary');
  return primaries.map((node) => {
    for (let i = 0; ; i++) {
      const key = `${prefix}:${i}`;
      const slot = keySlot(key);
      if (node.slots!.some(([a, b]) => a <= slot && slot <= b)) return key;
    }
  });
}

const CLIENTS: Record<string, () => Promise<any>> = {
  ioredis: async () => {
    const nodes = topology.described.nodes.filter((n) => n.role === 'primary').map(({ host, port }) => ({ host, port }));
    const client = new Redis.Cluster(nodes, { lazyConnect: true });
    client.on('error', () => {});
    await client.connect();
    return client;
  },
  'node-redis': async () => {
    const rootNodes = topology.described.nodes.map(({ host, port }) => ({ socket: { host, port } }));
    const client = createCluster({ rootNodes });
    client.on('error', () => {});
    await client.connect();
    return client;
  },
};

for (const lib of Object.keys(CLIENTS)) {
  describe(`Cluster with ${lib}`, () => {
    let client: any;
    before(() => {
      client = clients[lib];
    });

    it('every type works on keys of every primary', { timeout: 60_000 }, async () => {
      for (const key of keysOnEveryPrimary(`cluster:${lib}:types`)) {
        const a = new Mutex(client, key);
        const b = new Mutex(client, key);
        await a.acquire();
        assert.equal(await b.tryAcquire(), false);
        const waiting = b.acquire();
        assert.equal(await a.guard('SET', `{${key}}:data`, 'a'), 'OK');
        await a.release();
        await waiting;
        assert.ok(b.token! > 0);
        await b.release();

        const sem = new Semaphore(client, `${key}:sem`, 2);
        await sem.acquire(2);
        assert.equal(await sem.available(), 0);
        await sem.release();
        const rw = new ReadWriteLock(client, `${key}:rw`);
        await rw.readLock().acquire();
        await rw.readLock().release();
        await rw.writeLock().acquire();
        await rw.writeLock().release();
        const latch = new CountDownLatch(client, `${key}:latch`);
        assert.equal(await latch.trySetCount(1), true);
        const opened = latch.wait(5000);
        await latch.countDown();
        assert.equal(await opened, true);
      }
    });

    it('a MultiLock with a hash tag; without one, a clear error', { timeout: 60_000 }, async () => {
      const keys = [`{cluster:${lib}}:a`, `{cluster:${lib}}:b`];
      const multi = new MultiLock(client, keys);
      await multi.acquire();
      assert.equal(multi.tokens!.length, 2);
      await multi.release();
      assert.throws(
        () => new MultiLock(client, [`cluster:${lib}:x`, `cluster:${lib}:y`]),
        (err: unknown) =>
          err instanceof RLockError && err.code === 'ERR_RLOCK_CROSSSLOT' && /hash tag, e\.g\. \{order\}:1 \{order\}:2/.test(err.message),
      );
    });

    it("an election and its observer on the key's node", { timeout: 60_000 }, async () => {
      const name = `cluster:${lib}:election`;
      const first = new Election(client, name, 'first');
      const second = new Election(client, name, 'second');
      const seen = record(new Election(client, name, 'watcher').observe());
      await first.campaign();
      const next = second.campaign();
      await seen.when('first');
      await first.resign();
      await next;
      await seen.when('second');
      await second.resign();
      await seen.stop();
    });
  });
}

/** A primary with a replica now, and tags for each library's keys on it. */
function shardWithReplica(prefix: string): { key: string; tagOf: (lib: string) => string } {
  const key = keyWithReplica(`${prefix}:anchor`);
  const slot = keySlot(key);
  const primary = topology.described.nodes.find((n) => n.role === 'primary' && n.slots!.some(([a, b]) => a <= slot && slot <= b))!;
  return { key, tagOf: (lib) => keyOn(primary, `${prefix}:${lib}`) };
}

describe('Cluster failovers, both libraries at once, every type', () => {
  it('across CLUSTER FAILOVER: holders keep their holdings, waiters are served after them, tokens rise', { timeout: 90_000 }, async (t) => {
    const { key, tagOf } = shardWithReplica('cluster:failover');
    t.diagnostic(
      await everyTypeAcross(
        clients,
        tagOf,
        () => primaryFor(key),
        () => topology.failover(key).then(() => {}),
      ),
    );
  });

  it('across kill -9 of the primary and promotion: the same', { timeout: 90_000 }, async (t) => {
    const { key, tagOf } = shardWithReplica('cluster:kill');
    t.diagnostic(
      await everyTypeAcross(
        clients,
        tagOf,
        () => primaryFor(key),
        async () => {
          const victim = await primaryFor(key);
          const port = Number((victim.options as any).port);
          victim.disconnect();
          await topology.kill(port);
          await topology.awaitPromotion(key);
        },
      ),
    );
  });
});

describe('Cluster: a holding the new primary lacks', () => {
  it('is reported lost after the failover (onLockLost and the using() signal)', { timeout: 60_000 }, async () => {
    const client = await within(CLIENTS.ioredis(), 'ioredis cluster client connected');
    try {
      const key = keyWithReplica('cluster:lost');
      const shardPrimary = await primaryFor(key);
      const primaryPort = Number((shardPrimary.options as any).port);
      shardPrimary.disconnect();
      const { nodes } = topology.described;
      const primaryId = nodes.find((n) => n.port === primaryPort)!.id;
      const replicaPort = nodes.find((n) => n.role === 'replica' && n.primary_id === primaryId)!.port;
      const lost: string[] = [];
      // Unconfirmed on purpose (confirm: false), taken while the replica is stopped: the
      // promoted replica never gets it.
      const mutex = new Mutex(client, key, { confirm: false, onLockLost: (err) => lost.push(err.code) });
      await topology.pause(replicaPort);
      // 32 MB ahead of the lock in the replication stream: more than the sockets buffer, so the
      // lock's write is still in the primary's output buffer when it dies.
      const filler = await primaryFor(key);
      await filler.set(`{${key}}:filler`, Buffer.alloc(32 << 20, 120));
      filler.disconnect();
      let aborted: unknown = null;
      await mutex.using(async (signal) => {
        await topology.kill(primaryPort);
        await topology.resume(replicaPort);
        await topology.awaitPromotion(key);
        await until(() => signal.aborted, 20_000, 'the signal aborted');
        aborted = signal.reason;
      });
      assert.deepEqual(lost, ['ERR_RLOCK_LOST']);
      assert.equal((aborted as RLockError).code, 'ERR_RLOCK_LOST');
      assert.equal(mutex.isAcquired, false);
      const next = new Mutex(client, key);
      await next.acquire();
      await next.release();
    } finally {
      client.disconnect();
    }
  });
});
