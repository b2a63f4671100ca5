import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeadlockError, LockTimeoutError, MultiLock, Mutex, NotOwnedError, WrongTypeError } from '../src';
import { LIBS, fixture, info, until } from './support';

for (const lib of LIBS) {
  describe(`MultiLock with ${lib}`, () => {
    const f = fixture(lib, 'multi', { clients: 2 });
    const owner = async (key: string) => (await info(f.redis, 'RLOCK.INFO', key))?.owner ?? null;
    const waiters = async (key: string) => (await info(f.redis, 'RLOCK.INFO', key))?.waiters ?? 0;

    it('takes every key or none, and releases all in one step', async () => {
      const [a, b] = [f.key('a'), f.key('b')];
      const theirs = new Mutex(f.clients[1], b);
      await theirs.acquire();
      const ab = new MultiLock(f.clients[0], [a, b], { acquireTimeout: 100 });
      assert.equal(await ab.tryAcquire(), false);
      assert.equal(await owner(a), null, 'a was not taken either');
      await assert.rejects(ab.acquire(), LockTimeoutError);
      assert.equal(await owner(a), null, 'nor after the wait');
      assert.equal(await waiters(b), 0, 'nothing left queued');
      assert.equal(ab.tokens, null);
      await theirs.release();

      assert.equal(await ab.tryAcquire(), true);
      assert.equal(ab.isAcquired, true);
      const tokens = ab.tokens!;
      assert.equal(tokens.length, 2);
      assert.equal(await owner(a), ab.identifier);
      assert.equal(await owner(b), ab.identifier);
      assert.equal((await info(f.redis, 'RLOCK.INFO', a))!.token, tokens[0]);
      assert.equal((await info(f.redis, 'RLOCK.INFO', b))!.token, tokens[1]);
      await ab.release();
      assert.equal(await owner(a), null);
      assert.equal(await owner(b), null);
      assert.equal(ab.isAcquired, false);
      await assert.rejects(ab.release(), NotOwnedError);
    });

    it('a waiting acquire is granted every key at once when the other holder releases', async () => {
      const [a, b] = [f.key('a'), f.key('b')];
      const theirs = new Mutex(f.clients[1], b);
      await theirs.acquire();
      const ab = new MultiLock(f.clients[0], [a, b], { acquireTimeout: 10_000, lockTimeout: 30_000 });
      const waiting = ab.acquire();
      await until(async () => (await waiters(b)) === 1, 5000, 'the multi-lock queued on b');
      assert.equal(await owner(a), null, 'a waiting request holds nothing');
      assert.equal(await new Mutex(f.clients[1], a).tryAcquire(), false, "it keeps its place in a's queue");
      await theirs.release();
      const held = await waiting;
      assert.equal(held, ab);
      const tokens = held.tokens!;
      assert.equal(tokens.length, 2, 'tokens for both keys');
      assert.ok(tokens.every((token) => token > 0));
      assert.equal((await info(f.redis, 'RLOCK.INFO', a))!.token, tokens[0]);
      assert.equal((await info(f.redis, 'RLOCK.INFO', b))!.token, tokens[1]);
      await held.release();
      assert.equal(await owner(a), null);
      assert.equal(await owner(b), null);
    });

    it('a watchdog wait is granted and confirmed on every key', async () => {
      const [a, b] = [f.key('a'), f.key('b')];
      const theirs = new Mutex(f.clients[1], a);
      await theirs.acquire();
      const ab = new MultiLock(f.clients[0], [a, b]);
      const waiting = ab.acquire();
      await until(async () => (await waiters(a)) === 1, 5000, 'the multi-lock queued on a');
      await theirs.release();
      await waiting;
      assert.deepEqual(
        ab.mutexes.map((mutex) => mutex.token),
        ab.tokens,
      );
      assert.equal(await owner(b), ab.identifier);
      await ab.release();
    });

    it('a wait that times out leaves nothing held or queued', async () => {
      const [a, b, c] = [f.key('a'), f.key('b'), f.key('c')];
      const theirs = new Mutex(f.clients[1], b);
      await theirs.acquire();
      const abc = new MultiLock(f.clients[0], [a, b, c], { acquireTimeout: 300 });
      const started = Date.now();
      await assert.rejects(abc.acquire(), LockTimeoutError);
      const took = Date.now() - started;
      assert.ok(took >= 290 && took < 3000, `waited ${took} ms`);
      assert.equal(await owner(a), null);
      assert.equal(await owner(c), null);
      assert.equal(await owner(b), theirs.identifier);
      assert.equal(await waiters(b), 0);
      await theirs.release();
    });

    it('two owners nesting in opposite orders: the second wait gets DeadlockError at once', async () => {
      const [a, b, c] = [f.key('a'), f.key('b'), f.key('c')];
      const t1 = { identifier: `t1:${lib}:${a}`, acquireTimeout: 10_000 };
      const t2 = { identifier: `t2:${lib}:${a}`, acquireTimeout: 10_000 };
      const t1a = new Mutex(f.clients[0], a, t1);
      const t2b = new Mutex(f.clients[1], b, t2);
      await t1a.acquire();
      await t2b.acquire();
      const t1bc = new MultiLock(f.clients[0], [b, c], t1);
      const t1Waits = t1bc.acquire(); // t1 holds a, waits for b and c
      await until(async () => (await waiters(b)) === 1, 5000, 't1 queued on b');
      const started = performance.now();
      const err = await new Mutex(f.clients[1], a, t2).acquire().then(
        () => null,
        (e) => e,
      ); // t2 holds b, asks for a
      assert.ok(err instanceof DeadlockError, `a DeadlockError, got ${err}`);
      assert.ok(performance.now() - started < 1000, 'at once');
      assert.match(err.message, /^DEADLOCK this wait would close a cycle: /);
      // A MultiLock closing the cycle is refused the same way, nothing taken.
      await assert.rejects(new MultiLock(f.clients[1], [c, a], t2).acquire(), DeadlockError);
      assert.equal(await owner(c), null);
      assert.equal(await waiters(a), 0, 'the refused waits were not queued');
      assert.equal(await waiters(b), 1, 't1 keeps waiting');
      await t2b.release();
      await t1Waits;
      assert.equal(t1bc.tokens!.length, 2, 't1 gets b and c once t2 backs off');
      await t1bc.release();
      await t1a.release();
    });

    it('re-enters a key its owner holds; refuses what the server would', async () => {
      const [a, b, s] = [f.key('a'), f.key('b'), f.key('s')];
      const id = { identifier: `re:${lib}:${a}` };
      const single = new Mutex(f.clients[0], a, id);
      await single.acquire();
      const ab = new MultiLock(f.clients[0], [a, b], id);
      assert.equal(await ab.tryAcquire(), true);
      assert.equal(ab.tokens![0], single.token, 'the same holding');
      assert.equal((await info(f.redis, 'RLOCK.INFO', a))!.holds, 2);
      await ab.release();
      assert.equal((await info(f.redis, 'RLOCK.INFO', a))!.holds, 1);
      await single.release();

      assert.throws(() => new MultiLock(f.clients[0], [a, a]), TypeError);
      assert.throws(() => new MultiLock(f.clients[0], []), RangeError);
      await f.redis.set(s, 'x');
      await assert.rejects(new MultiLock(f.clients[0], [a, s]).tryAcquire(), WrongTypeError);
      assert.equal(await owner(a), null);
    });
  });
}
