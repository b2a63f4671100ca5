import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LockLostError, LockTimeoutError, ModuleNotLoadedError, Mutex, NotOwnedError, WrongTypeError, closeConnections } from '../src';
import { LIBS, Server, connect, disconnect, fixture, info, sleep, until } from './support';

for (const lib of LIBS) {
  describe(`Mutex with ${lib}`, () => {
    const f = fixture(lib, 'mutex', { clients: 2 });

    it('re-enters on one object; another object is excluded until the last release', async () => {
      const k = f.key();
      const a = new Mutex(f.clients[0], k);
      const b = new Mutex(f.clients[0], k);
      await a.acquire();
      const token = a.token;
      assert.equal(typeof token, 'number');
      await a.acquire();
      assert.equal(a.token, token, 're-entry keeps the token');
      assert.equal((await info(f.redis, 'RLOCK.INFO', k))!.holds, 2);
      assert.equal(await b.tryAcquire(), false);
      await a.release();
      assert.equal(a.isAcquired, true);
      assert.equal(await b.tryAcquire(), false);
      await a.release();
      assert.equal(a.isAcquired, false);
      assert.equal(a.token, null);
      assert.equal(await b.tryAcquire(), true);
      assert.ok(b.token! > token!, 'a new holding has a larger fencing token');
      await b.release();
      assert.equal(await info(f.redis, 'RLOCK.INFO', k), null);
    });

    it('excludes objects on different clients and holds with the watchdog on a connection of its own', async () => {
      const k = f.key();
      const a = new Mutex(f.clients[0], k);
      await a.acquire();
      const held = await info(f.redis, 'RLOCK.INFO', k);
      assert.equal(held!.owner, a.identifier);
      assert.notEqual(held!.watchdog, null, 'bound to a connection');
      assert.equal(await new Mutex(f.clients[1], k).tryAcquire(), false);
      await a.release();
    });

    it('a grant by message finds its waiter for keys with spaces and non-ASCII bytes', async () => {
      const k = `${f.key()} with spaces: ünï ✓`;
      const holder = new Mutex(f.clients[0], k);
      await holder.acquire();
      const waiter = new Mutex(f.clients[0], k, { acquireTimeout: 3000 });
      const granted = waiter.acquire();
      await until(async () => (await info(f.redis, 'RLOCK.INFO', k))!.waiters === 1, 5000, 'queued');
      await holder.release();
      await granted;
      assert.equal((await info(f.redis, 'RLOCK.INFO', k))!.owner, waiter.identifier);
      await waiter.release();
    });

    it('acquireTimeout: LockTimeoutError with a code, and the waiter leaves the queue', async () => {
      const k = f.key();
      const holder = new Mutex(f.clients[0], k);
      await holder.acquire();
      const waiter = new Mutex(f.clients[0], k, { acquireTimeout: 100 });
      const started = Date.now();
      await assert.rejects(waiter.acquire(), (err: any) => err instanceof LockTimeoutError && err.code === 'ERR_RLOCK_TIMEOUT');
      const took = Date.now() - started;
      assert.ok(took >= 95 && took < 1000, `timed out after ${took} ms`);
      assert.equal((await info(f.redis, 'RLOCK.INFO', k))!.waiters, 0);
      await holder.release();
      assert.equal(await waiter.tryAcquire(), true);
      await waiter.release();
    });

    it('using(fn) holds during fn and releases after, also when fn throws', async () => {
      const k = f.key();
      const m = new Mutex(f.clients[0], k);
      const result = await m.using(async (signal) => {
        assert.equal(signal.aborted, false);
        assert.equal((await info(f.redis, 'RLOCK.INFO', k))!.owner, m.identifier);
        return 42;
      });
      assert.equal(result, 42);
      assert.equal(await info(f.redis, 'RLOCK.INFO', k), null);
      await assert.rejects(
        m.using(async () => {
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await info(f.redis, 'RLOCK.INFO', k), null);
    });

    it('a lost lock: onLockLost from the server message, the using signal aborts (with the LockLostError), using() resolves', async () => {
      const k = f.key();
      const holder = new Mutex(f.clients[0], k);
      await holder.acquire();
      const lost: LockLostError[] = [];
      const m = new Mutex(f.clients[0], k, { onLockLost: (err) => lost.push(err) });
      let aborted: unknown = null;
      const running = m.using(async (signal) => {
        await until(() => signal.aborted, 5000, 'abort');
        aborted = signal.reason;
        return 'done';
      });
      await until(async () => (await info(f.redis, 'RLOCK.INFO', k))!.waiters === 1, 5000, 'queued');
      await holder.release(); // m is granted by message
      await until(() => m.isAcquired, 5000, 'granted');
      await f.redis.call('RLOCK.FORCERELEASE', k);
      assert.equal(await running, 'done');
      assert.ok(aborted instanceof LockLostError);
      assert.equal(lost.length, 1);
      assert.equal(lost[0].code, 'ERR_RLOCK_LOST');
      assert.equal(m.isAcquired, false);
    });

    it("release of a lock that ended meanwhile resolves (redis-semaphore's) and tells onLockLost once; a second is NotOwnedError", async () => {
      const k = f.key();
      const lost: LockLostError[] = [];
      const m = new Mutex(f.clients[0], k, { onLockLost: (e) => lost.push(e) });
      await m.acquire();
      await f.redis.call('RLOCK.FORCERELEASE', k);
      await m.release();
      assert.equal(lost.length, 1);
      assert.ok(lost[0] instanceof LockLostError && lost[0] instanceof NotOwnedError);
      assert.equal(m.isAcquired, false);
      await assert.rejects(m.release(), (err: any) => err instanceof NotOwnedError && err.code === 'ERR_RLOCK_NOT_OWNED');
    });

    it('lockTimeout: a plain lease, renewed every refreshInterval; without renewal it ends', async () => {
      const k = f.key();
      const refreshed = new Mutex(f.clients[0], k, { lockTimeout: 300, refreshInterval: 100 });
      await refreshed.acquire();
      assert.equal((await info(f.redis, 'RLOCK.INFO', k))!.watchdog, null, 'no watchdog binding');
      await sleep(700);
      assert.equal(refreshed.isAcquired, true);
      assert.equal((await info(f.redis, 'RLOCK.INFO', k))!.owner, refreshed.identifier);
      await refreshed.release();

      const lost: unknown[] = [];
      const lease = new Mutex(f.clients[0], k, { lockTimeout: 150, refreshInterval: 0, onLockLost: (e) => lost.push(e) });
      await lease.acquire();
      const waiter = new Mutex(f.clients[0], k, { acquireTimeout: 2000 });
      const started = Date.now();
      await waiter.acquire();
      const waited = Date.now() - started;
      assert.ok(waited >= 100 && waited < 1000, `granted after ${waited} ms`);
      await waiter.release();
      await lease.release(); // resolves after a loss, as redis-semaphore's; told once
      assert.equal(lost.length, 1);
    });

    it('WRONGTYPE becomes WrongTypeError', async () => {
      const k = f.key();
      await f.redis.set(k, 'not a lock');
      await assert.rejects(
        new Mutex(f.clients[0], k).tryAcquire(),
        (err: any) => err instanceof WrongTypeError && err.code === 'ERR_RLOCK_WRONGTYPE',
      );
      await assert.rejects(new Mutex(f.clients[0], k).acquire(), WrongTypeError);
    });

    it('a server without the module: ModuleNotLoadedError', async () => {
      const bare = await Server.start({ module: false });
      const c = await connect(lib, bare.port);
      try {
        await assert.rejects(
          new Mutex(c, 'x').tryAcquire(),
          (err: any) => err instanceof ModuleNotLoadedError && err.code === 'ERR_RLOCK_MODULE_NOT_LOADED',
        );
        await assert.rejects(new Mutex(c, 'x').acquire(), ModuleNotLoadedError);
      } finally {
        await disconnect(c);
        bare.kill();
      }
    });

    it('closing the user client closes rlock connections, which ends watchdog holdings', async () => {
      const k = f.key();
      const c = await connect(lib, f.server.port);
      const lost: unknown[] = [];
      const m = new Mutex(c, k, { onLockLost: (e) => lost.push(e) });
      await m.acquire();
      await disconnect(c);
      await until(async () => (await info(f.redis, 'RLOCK.INFO', k)) === null, 2000, 'released');
      assert.equal(lost.length, 1);
      closeConnections(c);
    });

    it('an acquireTimeout that is not a number of ms >= 0 is refused before anything is sent', async () => {
      const k = f.key();
      for (const bad of [Number.NaN, -1, '100' as unknown as number]) {
        const error = typeof bad === 'number' ? RangeError : TypeError;
        assert.throws(() => new Mutex(f.clients[0], k, { acquireTimeout: bad }), error);
        const mutex = new Mutex(f.clients[0], k);
        assert.throws(() => mutex.acquire({ acquireTimeout: bad }), error);
        assert.equal(mutex.isAcquired, false);
      }
      assert.equal(await info(f.redis, 'RLOCK.INFO', k), null, 'nothing was taken');
      const mutex = new Mutex(f.clients[0], k, { acquireTimeout: 0 });
      await mutex.acquire();
      await mutex.release();
    });
  });
}
