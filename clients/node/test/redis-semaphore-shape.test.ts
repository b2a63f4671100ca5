/**
 * What redis-semaphore's own suite checks that its users rely on, for its six classes, written
 * as our tests (its suite is run by hand from a fetched copy: README, "Switching from
 * redis-semaphore"): the argument checks and their messages, identifiers, acquire/release,
 * tryAcquire, timeouts (naming the key as given: the one deliberate difference its suite shows),
 * abort signals, and reuse of one object over several lifecycles. Who holds is read from the
 * server's own state (the objects of a second identifier are refused), not from its key layout.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  Mutex,
  MultiSemaphore,
  RedlockMultiSemaphore,
  RedlockMutex,
  RedlockSemaphore,
  Semaphore,
} from '../src';
import { Server, connect, disconnect, unhandled } from './support';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TIMEOUTS = { lockTimeout: 2000, acquireTimeout: 300, retryInterval: 10, refreshInterval: 500 };

interface Lockish {
  readonly identifier: string;
  readonly isAcquired: boolean;
  acquire(signal?: AbortSignal): Promise<void>;
  tryAcquire(): Promise<boolean>;
  release(): Promise<void>;
}

/** One of redis-semaphore's classes: how to build it, and the room it has (1 for a mutex). */
interface Shape {
  name: string;
  noun: RegExp;
  quorum: boolean;
  room: number;
  make(clients: unknown, key: string, options?: Record<string, unknown>): Lockish;
  /** The argument checks its constructor makes beyond client, key and identifier options. */
  badCounts: Array<[(clients: unknown) => unknown, RegExp]>;
}

const SHAPES: Shape[] = [
  { name: 'Mutex', noun: /mutex/, quorum: false, room: 1, badCounts: [], make: (c, k, o) => new Mutex(c, k, o) },
  {
    name: 'Semaphore',
    noun: /semaphore/,
    quorum: false,
    room: 2,
    make: (c, k, o) => new Semaphore(c, k, 2, o),
    badCounts: [
      [(c) => new Semaphore(c, 'key', 0), /"limit" is required/],
      [(c) => new Semaphore(c, 'key', '10' as unknown as number), /"limit" must be a number/],
    ],
  },
  {
    name: 'MultiSemaphore',
    noun: /multi-semaphore/,
    quorum: false,
    room: 2,
    make: (c, k, o) => new MultiSemaphore(c, k, 4, 2, o),
    badCounts: [
      [(c) => new MultiSemaphore(c, 'key', 0, 2), /"limit" is required/],
      [(c) => new MultiSemaphore(c, 'key', 5, 0), /"permits" is required/],
      [(c) => new MultiSemaphore(c, 'key', 5, '2' as unknown as number), /"permits" must be a number/],
    ],
  },
  { name: 'RedlockMutex', noun: /redlock-mutex/, quorum: true, room: 1, badCounts: [], make: (c, k, o) => new RedlockMutex(c as unknown[], k, o) },
  {
    name: 'RedlockSemaphore',
    noun: /redlock-semaphore/,
    quorum: true,
    room: 2,
    make: (c, k, o) => new RedlockSemaphore(c as unknown[], k, 2, o),
    badCounts: [[(c) => new RedlockSemaphore(c as unknown[], 'key', 0), /"limit" is required/]],
  },
  {
    name: 'RedlockMultiSemaphore',
    noun: /redlock-multi-semaphore/,
    quorum: true,
    room: 2,
    make: (c, k, o) => new RedlockMultiSemaphore(c as unknown[], k, 4, 2, o),
    badCounts: [[(c) => new RedlockMultiSemaphore(c as unknown[], 'key', 5, 0), /"permits" is required/]],
  },
];

describe("redis-semaphore's classes, as its users use them (ioredis)", () => {
  let servers: Server[];
  let clients: unknown[];

  before(async () => {
    servers = await Promise.all([0, 1, 2].map(() => Server.start()));
    clients = await Promise.all(servers.map((s) => connect('ioredis', s.port)));
  });
  after(async () => {
    await Promise.all(clients.map(disconnect));
    for (const s of servers) s.kill();
    assert.deepEqual(unhandled, []);
  });

  for (const shape of SHAPES) {
    const target = () => (shape.quorum ? clients : clients[0]);
    let n = 0;
    const key = () => `${shape.name}:${n++}`;

    describe(shape.name, () => {
      it('refuses bad arguments with its messages', () => {
        const missing = shape.quorum ? /"clients" array is required/ : /"client" is required/;
        assert.throws(() => shape.make(shape.quorum ? [] : null, 'key'), missing);
        assert.throws(() => shape.make(target(), ''), /"key" is required/);
        assert.throws(() => shape.make(target(), 1 as unknown as string), /"key" must be a string/);
        assert.throws(() => shape.make(target(), 'key', { identifier: '' }), /identifier must be not empty random string/);
        assert.throws(
          () => shape.make(target(), 'key', { acquiredExternally: true }),
          /acquiredExternally=true meanless without custom identifier/,
        );
        for (const extra of [{}, { acquiredExternally: true }]) {
          assert.throws(
            () => shape.make(target(), 'key', { externallyAcquiredIdentifier: '123', identifier: '123', ...extra }),
            /Invalid usage. Use custom identifier and acquiredExternally: true/,
          );
        }
        for (const [build, message] of shape.badCounts) assert.throws(() => build(target()), message);
      });

      it('identifiers: a random UUID by default, a suffix after it, or the one given', () => {
        assert.ok(shape.make(target(), 'key').isAcquired === false);
        assert.match(shape.make(target(), 'key', {}).identifier, UUID);
        const suffixed = shape.make(target(), 'key', { identifierSuffix: 'abc' }).identifier;
        assert.match(suffixed.slice(0, -4), UUID);
        assert.ok(suffixed.endsWith('-abc'), suffixed);
        assert.equal(shape.make(target(), 'key', { identifier: 'abc' }).identifier, 'abc');
      });

      it('acquire and release: held against others while acquired, free after; reusable over three lifecycles', async () => {
        const k = key();
        const lock = shape.make(target(), k, TIMEOUTS);
        for (let lifecycle = 0; lifecycle < 3; lifecycle++) {
          assert.equal(lock.isAcquired, false);
          await lock.acquire();
          assert.equal(lock.isAcquired, true);
          const others = Array.from({ length: shape.room }, () => shape.make(target(), k, TIMEOUTS));
          const admitted = await Promise.all(others.map((other) => other.tryAcquire()));
          assert.equal(admitted.filter(Boolean).length, shape.room - 1, `lifecycle ${lifecycle}: the room left`);
          await Promise.all(others.filter((_, i) => admitted[i]).map((other) => other.release()));
          await lock.release();
          assert.equal(lock.isAcquired, false);
          const after = shape.make(target(), k, TIMEOUTS);
          assert.equal(await after.tryAcquire(), true, `lifecycle ${lifecycle}: free after release`);
          await after.release();
        }
      });

      it('tryAcquire answers false when there is no room and true when there is', async () => {
        const k = key();
        const holders = Array.from({ length: shape.room }, () => shape.make(target(), k, TIMEOUTS));
        for (const holder of holders) assert.equal(await holder.tryAcquire(), true);
        assert.equal(await shape.make(target(), k, TIMEOUTS).tryAcquire(), false);
        await Promise.all(holders.map((holder) => holder.release()));
      });

      it('a wait past acquireTimeout rejects with "Acquire <noun> <key> timeout", the key as given', async () => {
        const k = key();
        const holders = Array.from({ length: shape.room }, () => shape.make(target(), k, TIMEOUTS));
        for (const holder of holders) await holder.acquire();
        const waiter = shape.make(target(), k, TIMEOUTS);
        await assert.rejects(waiter.acquire(), (err: Error) => {
          assert.match(err.message, new RegExp(`^Acquire ${shape.noun.source} ${k} timeout`));
          return true;
        });
        assert.equal(waiter.isAcquired, false);
        await Promise.all(holders.map((holder) => holder.release()));
        assert.equal(await waiter.tryAcquire(), true, 'the timed-out waiter left no trace in the queue');
        await waiter.release();
      });

      it('a wait whose signal is aborted rejects with the signal\'s reason', async () => {
        const k = key();
        const holders = Array.from({ length: shape.room }, () => shape.make(target(), k, TIMEOUTS));
        for (const holder of holders) await holder.acquire();
        const waiter = shape.make(target(), k, { ...TIMEOUTS, acquireTimeout: 5000 });
        await assert.rejects(waiter.acquire(AbortSignal.timeout(10)), /The operation was aborted due to timeout/);
        await Promise.all(holders.map((holder) => holder.release()));
      });
    });
  }
});
