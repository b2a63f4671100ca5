import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LockLostError, Mutex, NotOwnedError, ReplyError } from '../src';
import { LIBS, fixture } from './support';

for (const lib of LIBS) {
  describe(`guarded writes with ${lib}`, () => {
    const f = fixture(lib, 'guard', { clients: 2 });

    it("the holder's guarded writes run and return the inner command's reply", async () => {
      const [lock, balance, counter] = [f.key('lock'), f.key('balance'), f.key('counter')];
      const m = new Mutex(f.clients[0], lock);
      await m.acquire();
      assert.equal(await m.guard('SET', balance, '100'), 'OK');
      assert.equal(await m.guard('INCRBY', counter, 5), 5);
      assert.equal(await f.redis.get(balance), '100');
      // The inner command's own errors come back as they are; nothing is run.
      await assert.rejects(m.guard('GET', balance), (err: any) => err instanceof ReplyError && /runs one write/.test(err.message));
      assert.equal(m.isAcquired, true, 'an inner error is not a loss');
      await m.release();
      // Held by nobody (this object): nothing is sent.
      await assert.rejects(m.guard('SET', balance, '0'), (err: any) => err instanceof NotOwnedError && !(err instanceof LockLostError));
      assert.equal(await f.redis.get(balance), '100');
    });

    it("after a force release and a new holder, the old holder's guarded SET raises LockLostError and changes nothing", async () => {
      const [lock, balance] = [f.key('lock'), f.key('balance')];
      const lost: LockLostError[] = [];
      // tryAcquire waits for nothing, so no NOTIFY message tells this object of the loss:
      // only the server's check can refuse its write.
      const old = new Mutex(f.clients[0], lock, { onLockLost: (err) => lost.push(err) });
      assert.equal(await old.tryAcquire(), true);
      const oldToken = old.token;
      assert.equal(await old.guard('SET', balance, '100'), 'OK');
      assert.equal(await f.redis.call('RLOCK.FORCERELEASE', lock), 1);
      const next = new Mutex(f.clients[1], lock);
      await next.acquire();
      assert.ok(next.token! > oldToken!);
      assert.equal(old.isAcquired, true, 'the old holder does not know yet');

      await assert.rejects(
        old.guard('SET', balance, '0'),
        (err: any) => err instanceof LockLostError && err.code === 'ERR_RLOCK_LOST' && /NOTOWNER/.test(err.message),
      );
      assert.equal(await f.redis.get(balance), '100', 'the key is unchanged');
      assert.equal(old.isAcquired, false);
      assert.equal(lost.length, 1, 'onLockLost was called');
      await assert.rejects(old.guard('SET', balance, '0'), LockLostError);
      await old.release(); // resolves after a loss, as redis-semaphore's release() does; told once
      assert.equal(lost.length, 1);

      assert.equal(await next.guard('SET', balance, '150'), 'OK', "the new holder's write goes through");
      assert.equal(await f.redis.get(balance), '150');
      await next.release();
    });
  });
}
