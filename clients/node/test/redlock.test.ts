import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ExecutionError, Redlock, ResourceLockedError } from '../src';
import { LIBS, Server, admin, connect, disconnect, sleep, unhandled } from './support';

for (const lib of LIBS) {
  describe(`Redlock over 5 servers with ${lib}`, () => {
    let servers: Server[];
    let clients: any[];
    let a: Redlock;
    let b: Redlock;

    before(async () => {
      servers = await Promise.all([0, 1, 2, 3, 4].map(() => Server.start()));
      clients = await Promise.all(servers.map((s) => connect(lib, s.port)));
      a = new Redlock(clients, { retryCount: 0 });
      b = new Redlock(clients, { retryCount: 0 });
    });
    after(async () => {
      await a.quit();
      await Promise.all(clients.map(disconnect));
      for (const s of servers) s.kill();
      assert.deepEqual(unhandled, []);
    });

    async function holders(resource: string): Promise<Array<string | null>> {
      return Promise.all(
        servers.map(async (s) => {
          const redis = await admin(s.port).catch(() => null);
          if (!redis) return null;
          try {
            const reply = (await redis.call('RLOCK.INFO', resource)) as any[] | null;
            return reply ? String(reply[1]) : null;
          } catch {
            return null;
          } finally {
            redis.disconnect();
          }
        }),
      );
    }

    it('all up: held on every server for every resource; another Redlock is refused until release', async () => {
      const lock = await a.acquire(['r1', 'r2'], 5000);
      // Held once a majority granted; every server's answer, and so its tokens, by `attempts`.
      await Promise.all(lock.attempts);
      assert.equal(lock.tokens.length, 5);
      assert.ok(lock.tokens.every((t) => t !== null && t.length === 2 && t.every((x) => typeof x === 'number')));
      assert.ok(lock.expiration > Date.now() + 4000);
      assert.deepEqual(await holders('r2'), Array(5).fill(lock.value));
      const refused = await b.acquire(['r2'], 5000).then(
        () => null,
        (err) => err,
      );
      assert.ok(refused instanceof ExecutionError && refused.code === 'ERR_RLOCK_QUORUM', String(refused));
      const [stats] = await Promise.all(refused.attempts);
      assert.equal(stats.votesFor.size, 0);
      assert.deepEqual(new Set(stats.votesAgainst.keys()), new Set(clients), 'every server voted against (in the order they answered)');
      assert.ok([...stats.votesAgainst.values()].every((err) => err instanceof ResourceLockedError));
      assert.deepEqual(await holders('r2'), Array(5).fill(lock.value), 'the refused attempt gave back nothing of ours');
      await Promise.all((await lock.release()).attempts);
      assert.deepEqual(await holders('r1'), Array(5).fill(null));
      const next = await b.acquire(['r2'], 5000);
      await next.release();
    });

    it('using extends the lock while the routine runs and releases it after', async () => {
      const result = await a.using(['u'], 400, { automaticExtensionThreshold: 200 }, async (signal) => {
        await sleep(900);
        await assert.rejects(b.acquire(['u'], 1000), ExecutionError);
        return signal.aborted;
      });
      assert.equal(result, false);
      assert.deepEqual(await holders('u'), Array(5).fill(null));
    });

    it('a majority decides: acquire and release resolve while two servers are paused, and those answer after', async () => {
      const PAUSE_MS = 800;
      const pausers = await Promise.all(servers.slice(3).map((s) => admin(s.port)));
      const pause = () => Promise.all(pausers.map((p) => p.call('CLIENT', 'PAUSE', PAUSE_MS, 'ALL')));
      try {
        await pause();
        let started = Date.now();
        const lock = await a.acquire(['p'], 10_000);
        assert.ok(Date.now() - started < PAUSE_MS / 2, `acquired in ${Date.now() - started} ms, not waiting for the paused servers`);
        assert.deepEqual(
          lock.tokens.map((t) => t !== null),
          [true, true, true, false, false],
          'the paused servers have not answered yet',
        );
        const [acquired] = await Promise.all(lock.attempts);
        assert.equal(acquired.votesFor.size, 5, 'every server granted once the pause ended');
        assert.ok(lock.tokens.every((t) => t !== null && t.length === 1));
        assert.deepEqual(await holders('p'), Array(5).fill(lock.value));

        await pause();
        started = Date.now();
        const released = await lock.release();
        assert.ok(Date.now() - started < PAUSE_MS / 2, `released in ${Date.now() - started} ms, not waiting for the paused servers`);
        const [stats] = await Promise.all(released.attempts);
        assert.equal(stats.votesFor.size, 5, 'every server released once the pause ended');
        assert.deepEqual(await holders('p'), Array(5).fill(null));
      } finally {
        for (const p of pausers) p.disconnect();
      }
    });

    it('with 2 of 5 killed it still works; with 3 killed it refuses, and a using signal aborts', { timeout: 60_000 }, async () => {
      servers[0].kill();
      servers[1].kill();
      const lock = await a.acquire(['k'], 5000);
      assert.deepEqual(
        lock.tokens.map((t) => t !== null),
        [false, false, true, true, true],
      );
      await assert.rejects(b.acquire(['k'], 5000), ExecutionError);
      await lock.release();
      const again = await b.acquire(['k'], 5000);
      await again.release();

      let aborted: ExecutionError | undefined;
      await a.using(['v'], 500, { automaticExtensionThreshold: 300 }, async (signal) => {
        servers[2].kill();
        // A failed extension is tried again until the lock's validity ends, each try as long as
        // the dead server takes to refuse: on a loaded machine that ran past a fixed 3 s wait
        // (failed by chance). The signal aborts in the end whatever it takes: wait for that.
        if (!signal.aborted) await new Promise((done) => signal.addEventListener('abort', done, { once: true }));
        aborted = signal.error as ExecutionError;
      });
      assert.ok(aborted instanceof ExecutionError, 'the failed extension aborted the signal');

      await assert.rejects(
        a.acquire(['k'], 5000, { retryCount: 2, retryDelay: 10, retryJitter: 5 }),
        (err: any) => err instanceof ExecutionError && err.attempts.length === 3,
      );
    });
  });
}
