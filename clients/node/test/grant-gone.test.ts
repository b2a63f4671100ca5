import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LockLostError, Mutex } from '../src';
import { LIBS, Proxy, Server, admin, connect, disconnect, info, unhandled, until } from './support';

/**
 * A lease grant told by message and read only after its lease ended (CONTRACT.md C4.2, issue
 * 47's finding 10): the proxy holds back what the server sends to the waiter (a paused
 * process, a late subscriber) while the server grants it the lock under a 500 ms lease; the
 * lease ends unconfirmed and another owner takes the lock. Read late, the grant must be
 * confirmed with RENEW, which answers 0: the waiter must not report the lock held beside the
 * other (with confirmation off it did: no RENEW was sent); it reports the loss (LockLostError).
 */
for (const lib of LIBS) {
  describe(`a grant read after its lease ended, with ${lib}`, () => {
    let server: Server;
    let proxy: Proxy;
    let late: any; // through the proxy
    let direct: any;
    let redis: Awaited<ReturnType<typeof admin>>;

    before(async () => {
      server = await Server.start();
      proxy = await Proxy.start(server.port);
      late = await connect(lib, proxy.port);
      direct = await connect(lib, server.port);
      redis = await admin(server.port);
    });
    after(async () => {
      await disconnect(late);
      await disconnect(direct);
      proxy.close();
      redis.disconnect();
      server.kill();
      assert.deepEqual(unhandled, []);
    });

    for (const confirm of ['off', 'auto'] as const) {
      it(`confirm ${confirm}: a lease grant found gone by its RENEW is not reported held`, async () => {
        const key = `gone:${lib}:${confirm}`;
        const lock = async () => (await info(redis, 'RLOCK.INFO', key)) as { token: number; waiters: number } | null;
        const holder = new Mutex(direct, key, { lockTimeout: 30_000 });
        await holder.acquire();
        const first = holder.token!;
        const waiter = new Mutex(late, key, { lockTimeout: 500, acquireTimeout: 30_000, confirm });
        const acquired = waiter.acquire().then(
          () => `held with token ${waiter.token}`,
          (err: Error) => err,
        );
        await until(async () => (await lock())?.waiters === 1, 5000, 'the waiter to queue');

        proxy.holdReplies();
        await holder.release();
        await until(async () => ((await lock())?.token ?? 0) > first, 5000, 'the grant to the waiter');
        await until(async () => (await lock()) === null, 5000, "the unread grant's lease to end");
        const other = new Mutex(direct, key, { lockTimeout: 30_000 });
        await other.acquire();
        proxy.passReplies();

        const outcome = await acquired;
        assert.ok(outcome instanceof LockLostError, `the waiter says "${String(outcome)}" while the other holds the lock`);
        assert.equal(waiter.isAcquired, false);
        assert.equal((await lock())?.token, other.token, 'the other holding is left alone');
        await other.release();
      });
    }
  });
}
