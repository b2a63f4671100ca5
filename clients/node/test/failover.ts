/**
 * What every failover test checks, through the public API: confirmed holders and waiters told
 * by message (NOTIFY: the Node helper has no blocked waiter) of every type across a failover.
 * Each holder keeps its holding on the new primary (re-bound) or is told it lost it; each
 * waiter re-joins the new primary's queue and is served after its holder with a larger token;
 * a fenced resource never accepts two holders.
 */

import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { CountDownLatch, Election, Mutex, MultiLock, ReadWriteLock, Semaphore } from '../src';
import { info, infoField, record, until } from './support';

/** A resource that refuses a fencing token lower than the highest it saw. */
export class Fence {
  highest = 0;
  readonly accepted: number[] = [];
  write(token: number | null): boolean {
    if (token === null || token < this.highest) return false;
    this.highest = token;
    this.accepted.push(token);
    return true;
  }
}

/**
 * Every type at once on keys of one hash tag (one node): a holder and a waiter told by message
 * of each (a Mutex, a one-permit Semaphore, a writer and a waiting reader, a MultiLock, an
 * Election's leader, a second candidate and an observer; a CountDownLatch's waiter), so one
 * failover covers them all. `finish` runs after the event.
 */
export interface EveryType {
  /** How many queue entries its waits make (`rlock_notified_waiters`). */
  readonly waiters: number;
  /** The waits that ended already (they should all still wait): `<tag>:<type>: <outcome>`. */
  ended(): string[];
  /** On the new primary: the holders kept their holdings (or were told), the waiters are served. */
  finish(after: Redis): Promise<'kept' | 'lost'>;
}

/** One a waiting call (the MultiLock's all-or-none wait counts once: its keys are members of it). */
const EVERY_TYPE_WAITERS = 6;

export async function everyType(client: unknown, tag: string): Promise<EveryType> {
  const key = (what: string) => `{${tag}}:${what}`;
  const lost: string[] = [];
  const onLockLost = (err: Error) => lost.push(err.message);
  const mutex = new Mutex(client, key('mutex'), { onLockLost });
  const semaphore = new Semaphore(client, key('sem'), 1, { onLockLost });
  const writer = new ReadWriteLock(client, key('rw'), { onLockLost }).writeLock();
  const multi = new MultiLock(client, [key('m1'), key('m2')], { onLockLost });
  const leader = new Election(client, key('election'), 'leader', { onLost: onLockLost });
  const latch = new CountDownLatch(client, key('latch'));
  const seen = record(new Election(client, key('election'), 'watcher').observe());
  await Promise.all([mutex.acquire(), semaphore.acquire(), writer.acquire(), multi.acquire(), leader.campaign(), latch.trySetCount(1)]);
  const held = { mutex: mutex.token!, semaphore: semaphore.token!, writer: writer.token!, multi: multi.tokens!, leader: leader.term! };
  const fence = new Fence();
  assert.ok(fence.write(held.mutex));
  assert.equal(await mutex.guard('SET', key('data'), 'before'), 'OK');

  const ended: string[] = [];
  const served = <T>(type: string, promise: Promise<T>) => {
    promise.then(
      () => ended.push(`${tag}:${type}: served`),
      (err) => ended.push(`${tag}:${type}: ${err?.message ?? err}`),
    );
    return promise;
  };
  const nextMutex = new Mutex(client, key('mutex'));
  const nextSemaphore = new Semaphore(client, key('sem'), 1);
  const reader = new ReadWriteLock(client, key('rw')).readLock();
  const nextMulti = new MultiLock(client, [key('m1'), key('m2')]);
  const candidate = new Election(client, key('election'), 'candidate');
  const waits = {
    mutex: served(
      'mutex',
      nextMutex.acquire().then(() => nextMutex.token!),
    ),
    semaphore: served(
      'semaphore',
      nextSemaphore.acquire().then(() => nextSemaphore.token!),
    ),
    reader: served(
      'reader',
      reader.acquire().then(() => reader.token!),
    ),
    multi: served(
      'multi',
      nextMulti.acquire().then(() => nextMulti.tokens!),
    ),
    candidate: served('candidate', candidate.campaign()),
    latch: served('latch', latch.wait(60_000)),
  };
  await seen.when('leader');

  return {
    waiters: EVERY_TYPE_WAITERS,
    ended: () => ended,
    async finish(after: Redis) {
      const still = [mutex, semaphore, writer].every((h) => h.isAcquired) && multi.isAcquired && leader.isLeader;
      if (still) {
        // Kept on the new primary with the same tokens, the guard runs there.
        assert.deepEqual(
          { mutex: mutex.token, semaphore: semaphore.token, writer: writer.token, multi: multi.tokens, leader: leader.term },
          held,
        );
        assert.equal(String((await info(after, 'RLOCK.INFO', key('mutex')))!.owner), mutex.identifier);
        assert.equal(await mutex.guard('SET', key('data'), 'after'), 'OK');
        assert.equal(lost.length, 0);
        assert.ok(fence.write(mutex.token), 'the holder still writes');
      } else {
        assert.ok(lost.length > 0, 'a holding that did not survive was reported lost');
      }
      // One at a time: each waiter is served after its holder, with a larger token.
      await mutex.release().catch(() => {});
      const next = await waits.mutex;
      assert.ok(next > held.mutex, 'Mutex tokens rise');
      assert.ok(fence.write(next), 'the next holder is accepted');
      assert.equal(fence.write(held.mutex), false, 'the old holder is refused');
      await assert.rejects(mutex.guard('SET', key('data'), 'stale'), 'the old holder is refused');
      assert.equal(await nextMutex.guard('SET', key('data'), 'next'), 'OK');
      await semaphore.release().catch(() => {});
      assert.ok((await waits.semaphore) > held.semaphore, 'Semaphore tokens rise');
      await writer.release().catch(() => {});
      assert.ok((await waits.reader) > held.writer, 'ReadWriteLock tokens rise');
      await multi.release().catch(() => {});
      const multiTokens = await waits.multi;
      assert.ok(
        multiTokens.every((token, i) => token > held.multi[i]),
        'MultiLock tokens rise',
      );
      await leader.resign();
      assert.ok((await waits.candidate) > held.leader, 'terms rise');
      // Generous: after a kill the observer reconnects once the cluster agrees on the new primary.
      await seen.when('candidate', 15_000).catch((err) => {
        throw new Error(`${err.message}: the observer saw ${JSON.stringify(seen.owners())}`);
      });
      assert.equal(await latch.countDown(), 0);
      assert.equal(await waits.latch, true, 'the latch waiter is released');
      await Promise.all([nextMutex.release(), nextSemaphore.release(), reader.release(), nextMulti.release(), candidate.resign()]);
      await seen.stop();
      return still ? 'kept' : 'lost';
    },
  };
}

/**
 * `everyType` for each client (its own hash tag, on the one node `admin()` reaches), across
 * one `event`: the waiters are queued there before it and queued again on the new primary
 * after it, then each client's holders and waiters are checked. Says whether the holders kept
 * their holdings or were told they lost them.
 */
export async function everyTypeAcross(
  clients: Record<string, unknown>,
  tagOf: (lib: string) => string,
  admin: () => Promise<Redis>,
  event: () => Promise<void>,
): Promise<string> {
  const scenarios = await Promise.all(Object.entries(clients).map(([lib, client]) => everyType(client, tagOf(lib))));
  const waiters = scenarios.reduce((sum, s) => sum + s.waiters, 0);
  const queuedOn = async (redis: Redis, ms: number, where: string) => {
    let seen = -1;
    const queued = async () => (seen = await infoField(redis, 'rlock', 'rlock_notified_waiters').catch(() => -1)) === waiters;
    await until(queued, ms, where).catch((err) => {
      const ended = scenarios.flatMap((scenario) => scenario.ended());
      throw new Error(`${err.message}: ${seen} waiters, not ${waiters}; ended: ${ended.join('; ') || 'none'}`);
    });
  };
  const before = await admin();
  try {
    await queuedOn(before, 10_000, 'the waiters queued');
  } finally {
    before.disconnect();
  }
  await event();
  const after = await admin();
  try {
    await queuedOn(after, 20_000, 'the waiters queued again on the new primary');
    const outcomes: string[] = [];
    for (const scenario of scenarios) outcomes.push(await scenario.finish(after));
    return `holders ${outcomes.join(', ')}`;
  } finally {
    after.disconnect();
  }
}
