import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type Redis from 'ioredis';
import { Election, LockLostError, RLockError } from '../src';
import { EVENTS, LIBS, Proxy, connect, disconnect, fixture, info, record, sleep, until } from './support';

/** How many `RLOCK.LEADER` calls the server has run. */
async function leaderCalls(redis: Redis): Promise<number> {
  const text = (await redis.info('commandstats')) as string;
  return Number(/cmdstat_rlock\.leader:calls=(\d+)/.exec(text)?.[1] ?? 0);
}

async function observerConnections(redis: Redis): Promise<number> {
  return ((await redis.client('LIST')) as string).split('\n').filter((l) => / name=rlock-observer /.test(l)).length;
}

for (const lib of LIBS) {
  describe(`Election with ${lib}`, () => {
    const f = fixture(lib, 'election', { clients: 4, config: EVENTS });
    const queued = (name: string, n: number) =>
      until(async () => (await info(f.redis, 'RLOCK.INFO', name))?.waiters === n, 5000, `${n} queued`);

    it("three candidates: killing the leader's connection makes the next leader, and an observer sees it within 50 ms without polling", async (t) => {
      const name = f.key();
      const [e1, e2, e3] = [0, 1, 2].map((i) => new Election(f.clients[i], name, `candidate-${i + 1}@10.0.0.${i + 1}`));
      const lost: LockLostError[] = [];
      e1.onLost = (err) => lost.push(err);
      const term1 = await e1.campaign();
      assert.equal(e1.isLeader, true);
      assert.equal(e1.term, term1);
      assert.equal(await e1.campaign(), term1, 'campaigning as the leader: its term');
      assert.equal((await info(f.redis, 'RLOCK.INFO', name))!.holds, 1, 'not a second hold');
      const campaign2 = e2.campaign();
      await queued(name, 1);
      const campaign3 = e3.campaign();
      await queued(name, 2);
      assert.equal(e2.isLeader, false);
      const now = await e2.leader();
      assert.deepEqual({ owner: now!.owner, term: now!.term }, { owner: e1.candidate, term: term1 });
      assert.ok(now!.ttl > 0 && now!.ttl <= 30_000, 'the lease left');

      const observer = record(new Election(f.clients[3], name, 'observer').observe());
      await until(() => observer.seen.length === 1, 2000, 'the first value');
      assert.deepEqual({ ...observer.seen[0].leader, ttl: 0 }, { owner: e1.candidate, term: term1, ttl: 0 });
      const quiet = await leaderCalls(f.redis);
      await sleep(300);
      assert.equal(await leaderCalls(f.redis), quiet, 'the observer sends nothing between changes');

      const bound = (await info(f.redis, 'RLOCK.INFO', name))!.watchdog;
      const killed = performance.now();
      await f.redis.client('KILL', 'ID', String(bound));
      const term2 = await campaign2;
      const promoted = performance.now() - killed;
      const observed = (await observer.when(e2.candidate)) - killed;
      t.diagnostic(`follower leads ${promoted.toFixed(1)} ms, observer sees it ${observed.toFixed(1)} ms after the kill`);
      assert.ok(promoted < 1000, `the follower led ${promoted.toFixed(1)} ms after the kill`);
      assert.ok(observed < 1000, `the observer saw it ${observed.toFixed(1)} ms after the kill`);
      assert.ok(term2 > term1, 'terms only grow');
      assert.equal(e2.term, term2);
      await until(() => lost.length === 1, 3000, 'onLost');
      assert.equal(lost[0].code, 'ERR_RLOCK_LOST');
      assert.equal(e1.isLeader, false);
      assert.equal(e3.isLeader, false);
      assert.equal((await e1.leader())!.owner, e2.candidate);

      await e2.resign();
      const term3 = await campaign3;
      await observer.when(e3.candidate);
      assert.ok(term3 > term2);
      const terms = observer.seen.map((s) => s.leader?.term).filter((term) => term != null) as number[];
      assert.deepEqual(
        terms,
        [...terms].sort((a, b) => a - b),
        'observed terms only grow',
      );
      assert.equal(observer.owners().at(-1), e3.candidate);
      await e3.resign();
      await until(() => observer.seen.at(-1)!.leader === null, 2000, 'nobody leads, observed');
      assert.equal(await e3.leader(), null);
      assert.equal(lost.length, 1, 'resign() is no loss');
      await observer.stop();
      await observer.done;
    });

    it('onLost on a force release; resign() ends a campaign; the leader writes guarded by its term', async () => {
      const name = f.key();
      const data = f.key('data');
      const lost: LockLostError[] = [];
      const e1 = new Election(f.clients[0], name, 'one', { onLost: (err) => lost.push(err) });
      const e2 = new Election(f.clients[1], name, 'two');
      await e1.campaign();
      assert.equal(await e1.guard('SET', data, 'by one'), 'OK');
      const campaign2 = e2.campaign();
      await queued(name, 1);
      await f.redis.call('RLOCK.FORCERELEASE', name);
      await campaign2;
      await until(() => lost.length === 1, 2000, 'onLost');
      assert.equal(e1.isLeader, false);
      await assert.rejects(e1.guard('SET', data, 'stale'), LockLostError);
      await e1.resign(); // lost already: nothing to give back, no error
      assert.equal(await e2.guard('SET', data, 'by two'), 'OK');
      assert.equal(await f.redis.get(data), 'by two');

      const e3 = new Election(f.clients[2], name, 'three');
      const campaign3 = e3.campaign();
      await queued(name, 1);
      await e3.resign();
      await assert.rejects(campaign3, (err: any) => err.name === 'AbortError');
      assert.equal((await info(f.redis, 'RLOCK.INFO', name))!.waiters, 0, 'left the queue');
      assert.equal(e3.isLeader, false);
      const controller = new AbortController();
      const aborted = e3.campaign({ signal: controller.signal });
      await queued(name, 1);
      controller.abort();
      await assert.rejects(aborted, (err: any) => err.name === 'AbortError');
      await e2.resign();
      assert.equal(await e2.leader(), null);
      assert.equal(lost.length, 1);
    });

    it('observe() after its connections dropped reports the leader that took over meanwhile', async () => {
      const name = f.key();
      const proxy = await Proxy.start(f.server.port);
      const viaProxy = await connect(lib, proxy.port);
      try {
        const e1 = new Election(f.clients[0], name, 'first');
        const e2 = new Election(f.clients[1], name, 'second');
        await e1.campaign();
        const campaign2 = e2.campaign();
        await queued(name, 1);
        const observer = record(new Election(viaProxy, name, 'watcher').observe());
        await observer.when(e1.candidate);
        await until(async () => (await observerConnections(f.redis)) === 1, 2000, 'subscribed');

        proxy.refusing = true;
        proxy.cut();
        await until(async () => (await observerConnections(f.redis)) === 0, 2000, 'the observer cut off');
        await e1.resign(); // its events reach no observer
        await campaign2;
        await sleep(250); // reconnects are refused meanwhile
        assert.deepEqual(observer.owners(), [e1.candidate], 'nothing seen while cut off');
        proxy.refusing = false;
        await observer.when(e2.candidate);
        assert.deepEqual(observer.owners(), [e1.candidate, e2.candidate]);
        await e2.resign();
        await until(() => observer.seen.at(-1)!.leader === null, 2000, 'events again after the reconnect');
      } finally {
        await disconnect(viaProxy);
        proxy.close();
      }
      // Closing the client closed its observer.
      await until(async () => (await observerConnections(f.redis)) === 0, 2000, 'the observer closed with its client');
    });

    it('observe() ends on return() and on its signal, and refuses a server without keyspace events', async () => {
      const name = f.key();
      const election = new Election(f.clients[0], name, 'solo');
      const observer = election.observe();
      assert.deepEqual(await observer.next(), { value: null, done: false }, 'nobody leads yet');
      await election.campaign();
      const next = await observer.next();
      assert.equal(next.value?.owner, 'solo');
      await observer.return();
      assert.deepEqual(await observer.next(), { value: undefined, done: true });
      const controller = new AbortController();
      const signalled = election.observe({ signal: controller.signal });
      assert.equal((await signalled.next()).value?.owner, 'solo');
      controller.abort();
      assert.equal((await signalled.next()).done, true);
      await until(async () => (await observerConnections(f.redis)) === 0, 2000, 'closed');
      await election.resign();

      await f.redis.config('SET', 'notify-keyspace-events', 'Kg');
      try {
        await assert.rejects(
          election.observe().next(),
          (err: any) => err instanceof RLockError && err.code === 'ERR_RLOCK_NO_EVENTS' && /notify-keyspace-events/.test(err.message),
        );
      } finally {
        await f.redis.config('SET', 'notify-keyspace-events', EVENTS[1]);
      }
      await until(async () => (await observerConnections(f.redis)) === 0, 2000, 'closed after the failure');
    });
  });
}
