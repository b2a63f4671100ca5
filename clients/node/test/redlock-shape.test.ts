/**
 * What redlock's own suite (v5) checks, written as our tests over the setups it uses: one
 * instance, three instances and a Cluster (its suite is run by hand from a fetched copy: README,
 * "Switching from redlock"). Who holds is read with RLOCK.INFO (rlock keeps Redisson's hash, not
 * redlock's string: the one difference its unmodified tests show, at their `GET`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Redis, { Cluster } from 'ioredis';
import { ExecutionError, Redlock, ResourceLockedError } from '../src';
import { Server, freePort, sleep, unhandled, until } from './support';
import { Topology } from './topology';

type Client = Redis | Cluster;

/** The holder of `resource` on each client (null where free). */
async function holders(clients: Client[], resource: string): Promise<Array<string | null>> {
  return Promise.all(
    clients.map(async (client) => {
      const reply = (await client.call('RLOCK.INFO', resource)) as unknown[] | null;
      return reply ? String(reply[1]) : null;
    }),
  );
}

/**
 * Every server's answer to what `done` decided (a lock or a release resolves once a majority
 * agreed, as redlock's do): before reading each server through another connection.
 */
async function everyServer<T extends { attempts: ReadonlyArray<Promise<unknown>> }>(done: T): Promise<T> {
  await Promise.all(done.attempts);
  return done;
}

/** An ioredis client that gives up at once: redlock's suite connects so to a dead server. */
function unreachable(port: number): Redis {
  return new Redis({
    port,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    retryStrategy: () => null,
    reconnectOnError: () => false,
    lazyConnect: true,
  });
}

async function executionError(promise: Promise<unknown>): Promise<ExecutionError> {
  const err = await promise.then(
    () => null,
    (e) => e,
  );
  assert.ok(err instanceof ExecutionError, `expected an ExecutionError, got ${err}`);
  return err;
}

interface Setup {
  name: string;
  start(): Promise<{ clients: Client[]; stop(): Promise<void> }>;
}

const SETUPS: Setup[] = [
  {
    name: 'one instance',
    async start() {
      const server = await Server.start();
      const client = new Redis({ port: server.port });
      return { clients: [client], stop: async () => (client.disconnect(), server.kill()) };
    },
  },
  {
    name: 'three instances',
    async start() {
      const servers = await Promise.all([0, 1, 2].map(() => Server.start()));
      const clients = servers.map((s) => new Redis({ port: s.port }));
      return {
        clients,
        stop: async () => {
          for (const c of clients) c.disconnect();
          for (const s of servers) s.kill();
        },
      };
    },
  },
  {
    name: 'one cluster',
    async start() {
      const topology = await Topology.start('cluster');
      const primaries = topology.described.nodes.filter((n) => n.role === 'primary');
      const cluster = new Cluster(primaries.map((n) => ({ host: n.host, port: n.port })));
      await until(async () => (await cluster.cluster('INFO')).includes('cluster_state:ok'), 20_000, 'cluster ready');
      return { clients: [cluster], stop: async () => (cluster.disconnect(), await topology.stop()) };
    },
  },
];

for (const setup of SETUPS) {
  describe(`redlock's behaviours over ${setup.name}`, () => {
    let clients: Client[];
    let stop: () => Promise<void>;
    let redlock: Redlock;

    before(async () => {
      ({ clients, stop } = await setup.start());
      redlock = new Redlock(clients, { retryCount: 2, retryDelay: 100, retryJitter: 0 });
    });
    after(async () => {
      await redlock.quit();
      await stop();
      assert.deepEqual(unhandled, []);
    });

    it('refuses a non-integer duration', async () => {
      await assert.rejects(redlock.acquire(['{redlock}nonint'], 1.5), /Duration must be an integer value in milliseconds\./);
    });

    for (const resources of [['{redlock}a'], ['{redlock}a1', '{redlock}a2']]) {
      it(`acquires, extends and releases a lock on ${resources.length} resource(s)`, async () => {
        const lock = await everyServer(await redlock.acquire(resources, 300));
        for (const r of resources)
          assert.deepEqual(
            await holders(clients, r),
            clients.map(() => lock.value),
          );
        const first = lock.expiration;
        const extended = await everyServer(await lock.extend(1500));
        assert.ok(extended.expiration > first, 'the extension moves the expiration');
        await sleep(500); // past the first duration: still held, by the extension
        for (const r of resources)
          assert.deepEqual(
            await holders(clients, r),
            clients.map(() => lock.value),
          );
        await everyServer(await extended.release());
        for (const r of resources)
          assert.deepEqual(
            await holders(clients, r),
            clients.map(() => null),
          );
      });
    }

    it('a lock expires by itself at the end of its duration', async () => {
      const lock = await everyServer(await redlock.acquire(['{redlock}d'], 200));
      assert.deepEqual(
        await holders(clients, '{redlock}d'),
        clients.map(() => lock.value),
      );
      await until(async () => (await holders(clients, '{redlock}d')).every((h) => h === null), 5000, 'the lease ended');
      const next = await redlock.acquire(['{redlock}d'], 200);
      await next.release();
    });

    it('individual locks are exclusive: refused after retryCount+1 attempts, each voted down as locked', async () => {
      const lock = await everyServer(await redlock.acquire(['{redlock}c'], 5000));
      const err = await executionError(redlock.acquire(['{redlock}c'], 5000));
      assert.equal(err.attempts.length, 3);
      for (const attempt of await Promise.all(err.attempts)) {
        assert.equal(attempt.votesFor.size, 0);
        assert.equal(attempt.votesAgainst.size, clients.length);
        assert.ok([...attempt.votesAgainst.values()].every((e) => e instanceof ResourceLockedError));
      }
      assert.deepEqual(
        await holders(clients, '{redlock}c'),
        clients.map(() => lock.value),
        'still the first holder',
      );
      await lock.release();
      const next = await redlock.acquire(['{redlock}c'], 5000);
      await next.release();
    });

    it('overlapping multi-resource locks are exclusive, and a refusal leaves nothing held', async () => {
      const lock = await everyServer(await redlock.acquire(['{redlock}c1', '{redlock}c2'], 5000));
      await executionError(redlock.acquire(['{redlock}c2', '{redlock}c3'], 5000));
      assert.deepEqual(
        await holders(clients, '{redlock}c3'),
        clients.map(() => null),
        'c3 was given back',
      );
      await lock.release();
      const next = await redlock.acquire(['{redlock}c2', '{redlock}c3'], 5000);
      await next.release();
    });

    it('using() holds, extends past the duration while the routine runs, and releases after', async () => {
      let value = '';
      await redlock.using(['{redlock}x'], 500, { automaticExtensionThreshold: 200 }, async (signal) => {
        value = (await holders(clients, '{redlock}x'))[0] ?? '';
        await sleep(1000);
        assert.equal(signal.aborted, false);
        assert.deepEqual(
          await holders(clients, '{redlock}x'),
          clients.map(() => value),
          'extended: still held after 1 s',
        );
      });
      assert.ok(value);
      assert.deepEqual(
        await holders(clients, '{redlock}x'),
        clients.map(() => null),
      );
    });

    it('using() is exclusive: two routines on one resource never overlap', async () => {
      const patient = new Redlock(clients, { retryCount: 100, retryDelay: 20 });
      let inside = 0;
      let most = 0;
      const routine = () =>
        patient.using(['{redlock}y'], 1000, async () => {
          most = Math.max(most, ++inside);
          await sleep(150);
          inside--;
        });
      await Promise.all([routine(), routine(), routine()]);
      await patient.quit();
      assert.equal(most, 1);
    });
  });
}

describe("redlock's behaviours with servers down", () => {
  let servers: Server[];
  let live: Redis[];

  before(async () => {
    servers = await Promise.all([0, 1].map(() => Server.start()));
    live = servers.map((s) => new Redis({ port: s.port }));
  });
  after(async () => {
    for (const c of live) c.disconnect();
    for (const s of servers) s.kill();
  });

  it('a lock on an unreachable server fails after retryCount+1 attempts, each without a vote for it', async () => {
    const dead = unreachable(await freePort());
    const redlock = new Redlock([dead], { retryCount: 2, retryDelay: 50 });
    const err = await executionError(redlock.acquire(['{redlock}b'], 1000));
    assert.equal(err.attempts.length, 3);
    for (const attempt of await Promise.all(err.attempts)) assert.equal(attempt.votesFor.size, 0);
    dead.disconnect();
  });

  it('a minority of servers down: the lock is held on the majority; a majority down: refused', async () => {
    const minority = new Redlock([...live, unreachable(await freePort())], { retryCount: 0 });
    const lock = await minority.acquire(['{redlock}m'], 5000);
    const [stats] = await Promise.all(lock.attempts);
    assert.equal(stats.votesFor.size, 2);
    assert.equal(stats.votesAgainst.size, 1);
    await lock.release();

    const majority = new Redlock([live[0], unreachable(await freePort()), unreachable(await freePort())], { retryCount: 0 });
    await executionError(majority.acquire(['{redlock}m'], 5000));
    assert.deepEqual(await holders([live[0]], '{redlock}m'), [null], 'what the one server granted was given back');
  });
});
