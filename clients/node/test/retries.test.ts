import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConnectionError, CountDownLatch, LockLostError, Mutex, Semaphore } from '../src';
import { LIBS, Proxy, Server, admin, connect, disconnect, info, rlockClientIds, sleep, unhandled, until } from './support';

for (const lib of LIBS) {
  describe(`dropped connections with ${lib}`, () => {
    let server: Server;
    let proxy: Proxy;
    let client: any; // through the proxy
    let redis: Awaited<ReturnType<typeof admin>>;
    let n = 0;
    const key = () => `drop:${lib}:${++n}`;

    before(async () => {
      server = await Server.start();
      proxy = await Proxy.start(server.port);
      client = await connect(lib, proxy.port);
      redis = await admin(server.port);
    });
    after(async () => {
      await disconnect(client);
      proxy.close();
      redis.disconnect();
      server.kill();
      assert.deepEqual(unhandled, []);
    });

    it('tryAcquire whose reply is lost: the retry with the same ID holds once, and the holding moves to the new connection', async () => {
      const k = key();
      const m = new Mutex(client, k);
      proxy.dropAfter('RLOCK.ACQUIRE');
      const dropped = proxy.dropped;
      assert.equal(await m.tryAcquire(), true);
      assert.equal(proxy.dropped, dropped + 1, 'the reply was dropped');
      const held = await info(redis, 'RLOCK.INFO', k);
      assert.equal(held!.holds, 1, 'counted once');
      assert.equal(held!.token, m.token);
      proxy.closeOrphans(); // the first connection finally closes on the server
      await sleep(50);
      assert.equal((await info(redis, 'RLOCK.INFO', k))!.owner, m.identifier, 'still held: re-bound to the new connection');
      await m.release();
      assert.equal(await info(redis, 'RLOCK.INFO', k), null);
    });

    it('acquire() whose WAITING reply is lost: one queue entry, granted once', async () => {
      const k = key();
      const holder = new Mutex(client, k);
      await holder.acquire();
      const m = new Mutex(client, k);
      proxy.dropAfter('RLOCK.ACQUIRE');
      const dropped = proxy.dropped;
      const waiting = m.acquire();
      await until(() => proxy.dropped === dropped + 1, 5000, 'the drop');
      await sleep(50);
      assert.equal((await info(redis, 'RLOCK.INFO', k))!.waiters, 1, 'queued once');
      await holder.release();
      await waiting;
      proxy.closeOrphans();
      await sleep(50);
      const held = await info(redis, 'RLOCK.INFO', k);
      assert.equal(held!.owner, m.identifier);
      assert.equal(held!.holds, 1);
      await m.release();
      assert.equal(await info(redis, 'RLOCK.INFO', k), null);
    });

    it('a subscriber that drops while a wait is queued: the wait is sent again from a new one and granted', async () => {
      const k = key();
      const holder = new Mutex(client, k);
      await holder.acquire();
      const m = new Mutex(client, k);
      const waiting = m.acquire();
      await until(async () => (await info(redis, 'RLOCK.INFO', k))!.waiters === 1, 5000, 'queued');
      const subscribers = async () => (await rlockClientIds(redis)).filter((c) => c.flags.includes('P'));
      const [old] = await subscribers();
      assert.ok(old, 'a subscriber connection');
      await redis.client('KILL', 'ID', old.id);
      await until(
        async () => {
          const now = await subscribers();
          return now.length === 1 && now[0].id !== old.id;
        },
        5000,
        'a new subscriber',
      );
      await until(async () => (await info(redis, 'RLOCK.INFO', k))!.waiters === 1, 5000, 'queued again');
      await holder.release();
      await waiting;
      const held = await info(redis, 'RLOCK.INFO', k);
      assert.equal(held!.owner, m.identifier);
      assert.equal(held!.holds, 1);
      await m.release();
    });

    it('release whose reply is lost: the retry decrements nothing more', async () => {
      const k = key();
      const m = new Mutex(client, k);
      await m.acquire();
      await m.acquire();
      proxy.dropAfter('RLOCK.RELEASE');
      const dropped = proxy.dropped;
      await m.release();
      assert.equal(proxy.dropped, dropped + 1);
      proxy.closeOrphans();
      await sleep(50);
      const held = await info(redis, 'RLOCK.INFO', k);
      assert.equal(held?.holds, 1, 'one hold left, not zero');
      assert.equal(m.isAcquired, true);
      await m.release();
      assert.equal(await info(redis, 'RLOCK.INFO', k), null);
    });

    it('semaphore acquire and release whose replies are lost count once', async () => {
      const k = key();
      const s = new Semaphore(client, k, 3);
      proxy.dropAfter('RSEM.ACQUIRE');
      assert.equal(await s.tryAcquire(2), true);
      assert.equal(await s.available(), 1, 'two permits taken, not four');
      proxy.closeOrphans();
      await s.acquire(1);
      proxy.dropAfter('RSEM.RELEASE');
      await s.release();
      assert.equal(await s.available(), 1, 'one permit back, not two');
      await s.release();
      assert.equal(await s.available(), 3);
      proxy.closeOrphans();
    });

    it('semaphore trySetPermits and addPermits whose replies are lost count once', async () => {
      const k = key();
      const s = Semaphore.ofPermitsSetElsewhere(client, k);
      const dropped = proxy.dropped;
      proxy.dropAfter('RSEM.SETPERMITS');
      assert.equal(await s.trySetPermits(3), true, 'the retry of the call that set them');
      proxy.dropAfter('RSEM.ADDPERMITS');
      assert.equal(await s.addPermits(2), 5);
      proxy.dropAfter('RSEM.ADDPERMITS');
      assert.equal(await s.addPermits(-1), 4);
      assert.equal(proxy.dropped, dropped + 3, 'every reply was dropped once');
      assert.equal(await s.available(), 4, 'each added once');
      assert.equal(await s.trySetPermits(9), false);
      proxy.closeOrphans();
    });

    it('latch trySetCount and countDown whose replies are lost count once', async () => {
      const latch = new CountDownLatch(client, key());
      const dropped = proxy.dropped;
      proxy.dropAfter('RLATCH.SET');
      assert.equal(await latch.trySetCount(3), true, 'the retry of the call that set it');
      proxy.dropAfter('RLATCH.COUNTDOWN');
      assert.equal(await latch.countDown(), 2);
      assert.equal(proxy.dropped, dropped + 2, 'every reply was dropped once');
      assert.equal(await latch.getCount(), 2);
      assert.equal(await latch.trySetCount(9), false);
      proxy.closeOrphans();
    });

    it('a guarded write whose reply is lost is not sent again: ConnectionError, and it ran once', async () => {
      const k = key();
      const counter = `${k}:counter`;
      const m = new Mutex(client, k);
      await m.acquire();
      const bound = (await info(redis, 'RLOCK.INFO', k))!.watchdog;
      proxy.dropAfter('RLOCK.GUARD');
      const dropped = proxy.dropped;
      await assert.rejects(
        m.guard('INCR', counter),
        (err: any) => err instanceof ConnectionError && /may or may not have run/.test(err.message),
      );
      assert.equal(proxy.dropped, dropped + 1);
      assert.equal(await redis.get(counter), '1', 'ran once, not twice');
      // The holding is re-bound to a new connection before the server sees the old one close.
      await until(async () => (await info(redis, 'RLOCK.INFO', k))!.watchdog !== bound, 3000, 're-bound');
      proxy.closeOrphans();
      await sleep(50);
      assert.equal(m.isAcquired, true, 'still held');
      assert.equal(await m.guard('INCR', counter), 2);
      await m.release();
    });
  });

  describe(`watchdog connection with ${lib}`, () => {
    it('re-binds after a reconnect within the grace period, and reports the lock lost without one', async () => {
      const server = await Server.start({ config: ['watchdog-grace-ms', '1000'] });
      const client = await connect(lib, server.port);
      const redis = await admin(server.port);
      try {
        const k = 'rebind';
        const lost: LockLostError[] = [];
        const m = new Mutex(client, k, { onLockLost: (e) => lost.push(e) });
        await m.acquire();
        const bound = (await info(redis, 'RLOCK.INFO', k))!.watchdog;
        await redis.client('KILL', 'ID', String(bound));
        await until(
          async () => {
            const now = (await info(redis, 'RLOCK.INFO', k))?.watchdog;
            return now !== null && now !== undefined && now !== bound;
          },
          3000,
          're-bound',
        );
        await sleep(1300); // past the grace: kept because it was re-bound
        assert.equal((await info(redis, 'RLOCK.INFO', k))!.owner, m.identifier);
        assert.equal(m.isAcquired, true);
        assert.equal(lost.length, 0);

        await redis.config('SET', 'rlock.watchdog-grace-ms', '0');
        const again = (await info(redis, 'RLOCK.INFO', k))!.watchdog;
        await redis.client('KILL', 'ID', String(again));
        await until(() => lost.length === 1, 3000, 'lost');
        assert.equal(lost[0].code, 'ERR_RLOCK_LOST');
        assert.equal(m.isAcquired, false);
        await m.release(); // resolves after a loss, as redis-semaphore's; told once
        assert.equal(lost.length, 1);
      } finally {
        await disconnect(client);
        redis.disconnect();
        server.kill();
      }
    });

    it('PINGs the watchdog connection every third of rlock.watchdog-idle-ms', async () => {
      const server = await Server.start({ config: ['watchdog-idle-ms', '600'] });
      const client = await connect(lib, server.port);
      const redis = await admin(server.port);
      try {
        const m = new Mutex(client, 'idle');
        await m.acquire();
        const bound = String((await info(redis, 'RLOCK.INFO', 'idle'))!.watchdog);
        await sleep(2500);
        const conn = (await rlockClientIds(redis)).find((c) => c.id === bound);
        assert.ok(conn, 'the bound connection is still there');
        assert.equal(conn.cmd, 'ping');
        assert.ok(conn.idle <= 1, `idle ${conn.idle} s`);
        await m.release();
      } finally {
        await disconnect(client);
        redis.disconnect();
        server.kill();
      }
    });
  });
}
