/**
 * What redis-semaphore's own suite checks only through its key layout (those cases are left
 * out of the runs of its suite), checked here on rlock's: adopting a holding taken
 * elsewhere (`acquiredExternally`), `stopRefresh`, a release after the lease ended, the
 * positional `acquire(signal)`, and the Redlock classes' holdings on each server.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LockLostError, LockTimeoutError, Mutex, RedlockMutex, RedlockSemaphore, Semaphore } from '../src';
import { LIBS, Server, admin, connect, disconnect, fixture, info, sleep, unhandled, until } from './support';

const LEASE = { lockTimeout: 300, refreshInterval: 80 };

/** The holders of an RSEM key as owner -> permits. */
async function permitHolders(redis: any, key: string): Promise<Record<string, number>> {
  const semaphore = await info(redis, 'RSEM.INFO', key);
  const out: Record<string, number> = {};
  for (const holder of (semaphore?.holders ?? []) as any[][]) {
    const fields: Record<string, any> = {};
    for (let i = 0; i + 1 < holder.length; i += 2) fields[String(holder[i])] = holder[i + 1];
    out[String(fields.owner)] = Number(fields.permits);
  }
  return out;
}

for (const lib of LIBS) {
  describe(`redis-semaphore's options with ${lib}`, () => {
    const f = fixture(lib, 'switching');

    for (const form of ['acquiredExternally', 'externallyAcquiredIdentifier'] as const) {
      it(`a Mutex given ${form} adopts the holding (not re-entered) and keeps it past the lease`, async () => {
        const k = f.key();
        const external = new Mutex(f.clients[0], k, { ...LEASE, refreshInterval: 0 });
        const options =
          form === 'acquiredExternally'
            ? { identifier: external.identifier, acquiredExternally: true as const }
            : { externallyAcquiredIdentifier: external.identifier };
        const local = new Mutex(f.clients[0], k, { ...LEASE, ...options });
        assert.equal(local.identifier, external.identifier);
        await external.acquire();
        await local.acquire();
        assert.equal(local.isAcquired, true);
        await sleep(450); // past the 300 ms lease: only local's refresh keeps it
        const held = await info(f.redis, 'RLOCK.INFO', k);
        assert.equal(held!.owner, external.identifier);
        assert.equal(held!.holds, 1, 'adopted, not re-entered');
        assert.equal(local.token, held!.token);
        await local.release();
        assert.equal(await info(f.redis, 'RLOCK.INFO', k), null);
      });
    }

    it('adopting a holding that its identifier does not have rejects at once with LockTimeoutError', async () => {
      const k = f.key();
      const local = new Mutex(f.clients[0], k, {
        ...LEASE,
        identifier: 'nobody-holds-this',
        acquiredExternally: true,
        acquireTimeout: 5000,
      });
      const started = Date.now();
      await assert.rejects(local.acquire(), LockTimeoutError);
      assert.ok(Date.now() - started < 2000);
      assert.equal(await info(f.redis, 'RLOCK.INFO', k), null);
    });

    it('a Semaphore given acquiredExternally adopts the permits held under its identifier', async () => {
      const k = f.key();
      const external = new Semaphore(f.clients[0], k, 3, { ...LEASE, refreshInterval: 0 });
      await external.acquire(2);
      const local = new Semaphore(f.clients[0], k, 3, { ...LEASE, identifier: external.identifier, acquiredExternally: true });
      await local.acquire();
      await sleep(450);
      assert.deepEqual(await permitHolders(f.redis, k), { [external.identifier]: 2 });
      await local.release();
      assert.deepEqual(await permitHolders(f.redis, k), {});
      assert.equal(await local.available(), 3);
    });
  });
}

describe("redis-semaphore's behaviours on rlock's keys", () => {
  const f = fixture('ioredis', 'switching-behaviour');

  it('stopRefresh lets the lease end; release() then resolves and onLockLost is called once, on the object', async () => {
    const k = f.key();
    const lost: Array<{ err: LockLostError; acquired: boolean }> = [];
    const m = new Mutex(f.clients[0], k, {
      lockTimeout: 200,
      refreshInterval: 50,
      onLockLost(this: Mutex, err) {
        lost.push({ err, acquired: this.isAcquired });
      },
    });
    await m.acquire();
    m.stopRefresh();
    await until(async () => (await info(f.redis, 'RLOCK.INFO', k)) === null, 2000, 'the lease to end');
    await m.release();
    assert.equal(lost.length, 1);
    assert.ok(lost[0].err instanceof LockLostError);
    assert.equal(lost[0].acquired, false);
  });

  it("Semaphore.acquire(signal) waits and rejects with the signal's reason; tryAcquire(signal) takes one permit", async () => {
    const k = f.key();
    const holder = new Semaphore(f.clients[0], k, 1);
    assert.equal(await holder.tryAcquire(new AbortController().signal), true);
    const waiter = new Semaphore(f.clients[0], k, 1);
    const started = Date.now();
    await assert.rejects(waiter.acquire(AbortSignal.timeout(100)), (err: any) => err.name === 'TimeoutError');
    assert.ok(Date.now() - started >= 90);
    assert.equal((await info(f.redis, 'RSEM.INFO', k))!.waiters.length, 0, 'the wait left the queue');
    await holder.release();
  });

  it('identifierSuffix: <uuid>-<suffix>', () => {
    assert.match(new Mutex(f.clients[0], f.key(), { identifierSuffix: 'worker' }).identifier, /^[0-9a-f-]{36}-worker$/);
  });
});

describe('RedlockMutex and RedlockSemaphore over 3 servers', () => {
  let servers: Server[];
  let clients: any[];
  let admins: any[];
  let n = 0;
  const key = () => `switching-redlock:${++n}`;

  before(async () => {
    servers = await Promise.all([0, 1, 2].map(() => Server.start()));
    clients = await Promise.all(servers.map((s) => connect('ioredis', s.port)));
    admins = await Promise.all(servers.map((s) => admin(s.port)));
  });
  after(async () => {
    await Promise.all(clients.map(disconnect));
    for (const redis of admins) redis.disconnect();
    for (const s of servers) s.kill();
    assert.deepEqual(unhandled, []);
  });

  const owners = (k: string) =>
    Promise.all(admins.map(async (redis) => (await info(redis, 'RLOCK.INFO', k).catch(() => null))?.owner ?? null));

  it('holds on every server under one identifier, excludes another, and releases everywhere', async () => {
    const k = key();
    const a = new RedlockMutex(clients, k, LEASE);
    const b = new RedlockMutex(clients, k, { ...LEASE, acquireTimeout: 100 });
    await a.acquire();
    assert.deepEqual(await owners(k), [a.identifier, a.identifier, a.identifier]);
    await assert.rejects(b.acquire(), LockTimeoutError);
    await sleep(400); // past the lease: renewed on every server
    assert.deepEqual(await owners(k), [a.identifier, a.identifier, a.identifier]);
    await a.acquire(); // re-enters: one release is not enough
    await a.release();
    assert.deepEqual(await owners(k), [a.identifier, a.identifier, a.identifier]);
    await a.release();
    assert.deepEqual(await owners(k), [null, null, null]);
    await b.acquire();
    await b.release();
  });

  it('a semaphore of 2 permits over 3 servers lets 2 holders in, not a third', async () => {
    const k = key();
    const [s1, s2, s3] = [0, 1, 2].map(() => new RedlockSemaphore(clients, k, 2, { ...LEASE, acquireTimeout: 100 }));
    await s1.acquire();
    await s2.acquire();
    await assert.rejects(s3.acquire(), LockTimeoutError);
    for (const redis of admins) assert.deepEqual(Object.keys(await permitHolders(redis, k)).sort(), [s1.identifier, s2.identifier].sort());
    await s1.release();
    await s3.acquire();
    await Promise.all([s2.release(), s3.release()]);
  });

  it('a server that lost the lock is asked again at the next refresh, as redis-semaphore does', async () => {
    const k = key();
    const lost: LockLostError[] = [];
    const a = new RedlockMutex(clients, k, { ...LEASE, onLockLost: (e) => lost.push(e) });
    await a.acquire();
    await admins[0].call('RLOCK.FORCERELEASE', k);
    await until(async () => (await owners(k))[0] === a.identifier, 2000, 'server 0 to be taken again');
    await admins[1].call('RLOCK.FORCERELEASE', k); // one server at a time: never below a majority
    await until(async () => (await owners(k))[1] === a.identifier, 2000, 'server 1 to be taken again');
    assert.equal(a.isAcquired, true);
    assert.equal(lost.length, 0);
    await a.release();
    await sleep(LEASE.refreshInterval * 2); // a re-take racing the release would show here
    assert.deepEqual(await owners(k), [null, null, null]);
  });

  // Last: it kills two of the servers.
  it('losing the majority (two servers killed) calls onLockLost and gives back what the last server held', async () => {
    const k = key();
    const lost: LockLostError[] = [];
    const a = new RedlockMutex(clients, k, { ...LEASE, onLockLost: (e) => lost.push(e) });
    await a.acquire();
    servers[0].kill();
    await sleep(LEASE.lockTimeout + 200);
    assert.equal(a.isAcquired, true, 'two of three still hold it');
    assert.equal(lost.length, 0);
    servers[1].kill();
    await until(() => lost.length === 1, 3000, 'the loss');
    assert.equal(a.isAcquired, false);
    // The third server's 300 ms lease is renewed every 80 ms while held: what this tells apart is
    // given back (or left to expire) against renewed for ever. 2 s failed by chance once in a
    // make test run (4 suites side by side), and passed 4 of 4 alone.
    await until(async () => (await owners(k))[2] === null, 10_000, 'the third server to be given back');
    await a.release();
  });
});
