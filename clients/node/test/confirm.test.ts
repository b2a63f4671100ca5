/**
 * Confirmation by the replicas on a primary with one replica (the harness's `replicated`
 * topology, started once for the file): a confirmed acquisition is on the replica when it
 * resolves; with the replica stopped (SIGSTOP) no acquisition is reported held, however it
 * happens (at once, by message, a lease, permits, read/write, several keys, an election), and
 * a release or count-down not confirmed fails with the write standing.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { CountDownLatch, Election, MultiLock, Mutex, NotConfirmedError, ReadWriteLock, Semaphore } from '../src';
import { LIBS, connect, disconnect, info, unhandled, until } from './support';
import { Topology } from './topology';

const FAST = { timeout: 300 };

let topology: Topology;
let primary: Redis;
let replica: Redis;

before(async () => {
  topology = await Topology.start('replicated');
  const { primary: p, replicas } = topology.described;
  primary = new Redis({ host: p!.host, port: p!.port });
  replica = new Redis({ host: replicas[0].host, port: replicas[0].port });
});

after(async () => {
  primary?.disconnect();
  replica?.disconnect();
  await topology?.stop();
  assert.deepEqual(unhandled, []);
});

async function waits(): Promise<number> {
  const text = String(await primary.call('INFO', 'commandstats'));
  return Number(/cmdstat_wait:calls=(\d+)/.exec(text)?.[1] ?? 0);
}

/** Rejects with NotConfirmedError naming 0 of 1 replicas, no sooner than the timeout. */
async function notConfirmed(promise: Promise<unknown>): Promise<void> {
  const started = Date.now();
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof NotConfirmedError, `expected NotConfirmedError, got ${err}`);
    assert.equal(err.code, 'ERR_RLOCK_NOT_CONFIRMED');
    assert.equal(err.confirmed, 0);
    assert.equal(err.required, 1);
    assert.match(err.message, /confirmed by 0 of 1 replicas within 300 ms/);
    return true;
  });
  assert.ok(Date.now() - started >= 250, `failed after ${Date.now() - started} ms, before the confirmation timeout`);
}

async function withReplicaStopped(fn: () => Promise<void>): Promise<void> {
  const port = topology.described.replicas[0].port;
  await topology.pause(port);
  try {
    await fn();
  } finally {
    await topology.resume(port);
  }
}

for (const lib of LIBS) {
  describe(`confirmation by the replica with ${lib}`, () => {
    let client: any;
    let n = 0;
    const key = (what: string) => `confirm:${lib}:${what}:${++n}`;
    before(async () => {
      client = await connect(lib, topology.described.primary!.port);
    });
    after(() => disconnect(client));

    it('a confirmed acquisition is on the replica when it resolves; confirm false sends no WAIT', async () => {
      const k = key('mutex');
      const before = await waits();
      const mutex = new Mutex(client, k);
      await mutex.acquire();
      assert.equal(await replica.exists(k), 1, 'the replica has the lock');
      assert.ok((await waits()) > before, 'a WAIT was sent');
      await mutex.release();
      assert.equal(await replica.exists(k), 0, 'the replica has the release');
      const quiet = await waits();
      const off = new Mutex(client, key('off'), { confirm: false });
      await off.acquire();
      await off.release();
      assert.equal(await waits(), quiet, 'no WAIT without confirmation');
    });

    it('replica stopped: acquisitions at once and by message are given back (NotConfirmedError), nothing held', async () => {
      const k = key('mutex');
      const queued = key('queued');
      const holder = new Mutex(client, queued, { confirm: false });
      await holder.acquire();
      const waiter = new Mutex(client, queued, { confirm: FAST });
      const waiting = waiter.acquire();
      waiting.catch(() => {});
      await until(async () => Number((await info(primary, 'RLOCK.INFO', queued))?.waiters) === 1, 5000, 'the waiter queued');
      await withReplicaStopped(async () => {
        await notConfirmed(new Mutex(client, k, { confirm: FAST }).acquire());
        assert.equal(await primary.call('RLOCK.INFO', k), null, 'nothing held');
        await notConfirmed(new Mutex(client, k, { confirm: FAST, lockTimeout: 10_000 }).tryAcquire());
        assert.equal(await primary.call('RLOCK.INFO', k), null, 'nothing held (lease)');
        await holder.release(); // granted to the waiter by message: confirmed by RENEW + WAIT
        await notConfirmed(waiting);
        assert.equal(waiter.isAcquired, false);
        assert.equal(await primary.call('RLOCK.INFO', queued), null, 'the grant by message was given back');
      });
    });

    it('replica stopped: permits, read and write, several keys and an election are given back', async () => {
      const s = key('sem');
      const rw = key('rw');
      const tag = key('multi');
      const keys = [`{${tag}}:a`, `{${tag}}:b`];
      const e = key('election');
      const sem = new Semaphore(client, s, 2, { confirm: FAST });
      assert.equal(await sem.trySetPermits(2), true);
      await withReplicaStopped(async () => {
        await notConfirmed(sem.acquire(1));
        assert.equal(await sem.available(), 2, 'the permit is back');
        await notConfirmed(new ReadWriteLock(client, rw, { confirm: FAST }).readLock().acquire());
        await notConfirmed(new ReadWriteLock(client, rw, { confirm: FAST }).writeLock().acquire());
        assert.equal(await primary.call('RWLOCK.INFO', rw), null, 'nothing held');
        await notConfirmed(new MultiLock(client, keys, { confirm: FAST }).acquire());
        for (const k of keys) assert.equal(await primary.call('RLOCK.INFO', k), null, `${k} not held`);
        const candidate = new Election(client, e, 'me', { confirm: FAST });
        await notConfirmed(candidate.campaign());
        assert.equal(candidate.isLeader, false);
        assert.equal(await primary.call('RLOCK.INFO', e), null, 'nobody leads');
      });
    });

    it('replica stopped: a release and a count-down stand but fail unconfirmed; onFailure warn goes on', async () => {
      const k = key('release');
      const mutex = new Mutex(client, k, { confirm: FAST });
      await mutex.acquire();
      const l = key('latch');
      const latch = new CountDownLatch(client, l, { confirm: FAST });
      assert.equal(await latch.trySetCount(2), true);
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(w.message);
      process.on('warning', onWarning);
      try {
        await withReplicaStopped(async () => {
          await notConfirmed(mutex.release());
          assert.equal(mutex.isAcquired, false);
          assert.equal(await primary.call('RLOCK.INFO', k), null, 'the release stands on the primary');
          await notConfirmed(latch.countDown());
          assert.equal(await latch.getCount(), 1, 'the count-down stands');
          const relaxed = new Mutex(client, key('warn'), { confirm: { timeout: 300, onFailure: 'warn' } });
          await relaxed.acquire();
          assert.equal(relaxed.isAcquired, true);
          await until(() => warnings.some((w) => /confirmed by 0 of 1 replicas/.test(w)), 2000, 'the warning');
          await relaxed.release();
        });
      } finally {
        process.off('warning', onWarning);
      }
    });
  });
}
