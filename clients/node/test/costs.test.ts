/**
 * What an uncontended acquire+release pair costs, counted exactly (issue 46): commands on the
 * server, new connections, timers set and promises made in this process. A benchmark is noisy;
 * a count is not, so these fail the moment the uncontended path grows a round trip, a
 * connection, a timer or a layer of promises.
 *
 * Each case warms up first (the first pair opens the command connection and the subscriber),
 * then counts over PAIRS pairs on the suite's own server (nothing else runs commands on it).
 */

import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { after, before, describe, it } from 'node:test';
import type Redis from 'ioredis';
import { Mutex, Redlock } from '../src';
import { LIBS, Server, admin, connect, disconnect, fixture, infoField } from './support';

const PAIRS = 100;

/**
 * Counted apart, as they come with time and not with pairs: ROLE, the replica count read for
 * confirmation at most once a second; the keep-alive's CONFIG GET (once, a second after the
 * first watchdog holding) and PINGs (every third of rlock.watchdog-idle-ms while one is held).
 * PUBSUB NUMSUB is run inside the server by the module (its check that a NOTIFY connection is
 * subscribed), no round trip; INFO is this test's own.
 */
const TIMED = ['role', 'config|get', 'ping'];
const NOT_PER_PAIR = new Set([...TIMED, 'pubsub|numsub', 'info']);

/**
 * Timers set per pair: none (a connection's reply deadlines share one timer, src/deadlines.ts;
 * so do the bounds on Redlock's votes, which were a timer per server and attempt until
 * session 14: 1 a pair on one server, 3 on three).
 */
const TIMERS_PER_PAIR = { Mutex: 0, Redlock: 0, 'Redlock over three servers': 0 };

/**
 * Promises made per pair (async_hooks, which also counts the throwaway promise of each
 * `await`), client library's own included: what the call path costs beside the wire. Before
 * the call path was folded (one frame per call, no promise per reply deadline, the waiter's
 * promise made only once the server queues the wait) the Mutex made 53 with ioredis, 21 until
 * the release read `callEx`'s record itself and Redlock's calls had one `then` each (50 then),
 * and one server's vote was an `async` frame (42 then), 20 and 39 until session 14: a call on
 * an open connection is one `then` on its reply (no `async` frame awaiting it), Redlock reads
 * a server's reply and casts its vote in that `then` (no promise per vote to bound, read and
 * count it, no `Promise.allSettled`): over three servers 77 a pair before, 43 then. The
 * Mutex made 18 until session 15: an acquire granted in its reply is read in the one `then`
 * on it (`Holder.quickTaking`: no `async` frame of the acquire, the wait or the call, no record
 * of the call) and so is a release (`Session.callRead`), and a connection hands the reply to
 * its reader where it reads it (`sendThen`: no `then` of the caller's own on a promise of the
 * reply, which takes one a call off Redlock's votes too): 8, and 23 and 37 for Redlock.
 * redis-semaphore's Mutex makes 20 on the same client; redlock 30 on one server, 48 on three.
 */
const PROMISES_PER_PAIR = { Mutex: 8, Redlock: 23, 'Redlock over three servers': 37 };

/**
 * Writes to a `Map` or `Set` per pair (`set`, `add`, `delete`, anybody's: neither client
 * library makes one per command): registries written on every acquire and given back on every
 * release, hashing each time. Until session 15 the Mutex made 8: the waiter's target set and
 * deleted in the Dispatcher's map, the holding added to and deleted from the Session's, and each
 * call's reply deadline added to and deleted from its connection's set; Redlock 8 over one
 * server (its rounds' own sets: 2 a pair and server). Not counted over three servers: a round
 * decided early counts its last votes after the pair, and how many land inside the count
 * depends on the timing. Now the deadlines are a list in the order of the replies (`Deadlines`), and a
 * target's list of waiters and an idle holding stay registered for the next acquire
 * (dropped when the registry doubled, `SWEEP_AT_LEAST`).
 */
const REGISTRY_WRITES_PER_PAIR = { Mutex: 0, Redlock: 2, 'Redlock over three servers': null };

/** The loop's own promises and a few made once (this test's async wrappers): not per pair. */
const PROMISES_ONCE = 20;

interface Holder {
  acquire(): Promise<void>;
  release(): Promise<void>;
}

function redlockHolder(clients: unknown[], key: string): Holder {
  const redlock = new Redlock(clients, { retryCount: -1 });
  let lock: { release(): Promise<unknown> } | null = null;
  return {
    acquire: async () => {
      lock = await redlock.acquire([key], 10_000);
    },
    release: async () => {
      await lock!.release();
    },
  };
}

async function commandCalls(redis: any): Promise<Map<string, number>> {
  const text = (await redis.info('commandstats')) as string;
  const calls = new Map<string, number>();
  for (const line of text.split('\r\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (match) calls.set(match[1], Number(match[2]));
  }
  return calls;
}

/** Counts every promise made while `run` runs (`run`'s own loop included). */
async function promisesMadeDuring(run: () => Promise<void>): Promise<number> {
  let count = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') count++;
    },
  });
  hook.enable();
  try {
    await run();
  } finally {
    hook.disable();
  }
  return count;
}

/** Counts every setTimeout while `run` runs. */
async function timersSetDuring(run: () => Promise<void>): Promise<number> {
  const original = globalThis.setTimeout;
  let count = 0;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    count++;
    return original(...args);
  }) as typeof setTimeout;
  try {
    await run();
  } finally {
    globalThis.setTimeout = original;
  }
  return count;
}

/** Counts the writes to any `Map` or `Set` while `run` runs. */
async function registryWritesDuring(run: () => Promise<void>): Promise<number> {
  let count = 0;
  const saved: Array<[any, string, (...args: unknown[]) => unknown]> = [];
  for (const [proto, names] of [
    [Map.prototype, ['set', 'delete']],
    [Set.prototype, ['add', 'delete']],
  ] as const) {
    for (const name of names) {
      const original = (proto as any)[name];
      saved.push([proto, name, original]);
      (proto as any)[name] = function (this: unknown, ...args: unknown[]) {
        count++;
        return original.apply(this, args);
      };
    }
  }
  try {
    await run();
  } finally {
    for (const [proto, name, original] of saved) proto[name] = original;
  }
  return count;
}

/**
 * Runs PAIRS pairs of `holder` after one to warm up (the command connection and the
 * subscriber), and checks what they cost on each of `servers` (an admin connection each) and
 * in this process against the `name` row of the tables above.
 */
async function checkCosts(name: keyof typeof PROMISES_PER_PAIR, holder: Holder, servers: Redis[]): Promise<void> {
  await holder.acquire();
  await holder.release();
  const connectionsBefore = await Promise.all(servers.map((redis) => infoField(redis, 'stats', 'total_connections_received')));
  const before = await Promise.all(servers.map(commandCalls));
  const started = Date.now();
  let promises = 0;
  let writes = 0;
  const timers = await timersSetDuring(async () => {
    promises = await promisesMadeDuring(async () => {
      writes = await registryWritesDuring(async () => {
        for (let i = 0; i < PAIRS; i++) {
          await holder.acquire();
          await holder.release();
        }
      });
    });
  });
  const elapsedS = (Date.now() - started) / 1000;
  let timed = 0;
  let timedTimers = Math.ceil(elapsedS) + 2;
  for (const [i, redis] of servers.entries()) {
    const after = await commandCalls(redis);
    const connections = (await infoField(redis, 'stats', 'total_connections_received')) - connectionsBefore[i];
    const delta: Record<string, number> = {};
    for (const [command, calls] of after) {
      const more = calls - (before[i].get(command) ?? 0);
      if (more) delta[command] = more;
    }
    const perPair = Object.fromEntries(Object.entries(delta).filter(([command]) => !NOT_PER_PAIR.has(command)));
    assert.deepEqual(
      perPair,
      { 'rlock.acquire': PAIRS, 'rlock.release': PAIRS },
      `commands in ${PAIRS} pairs on server ${i}: ${JSON.stringify(delta)}`,
    );
    const timedHere = TIMED.reduce((sum, command) => sum + (delta[command] ?? 0), 0);
    assert.ok(timedHere <= 2 * (elapsedS + 2), `${JSON.stringify(delta)} in ${elapsedS} s`);
    assert.equal(connections, 0, `${PAIRS} pairs opened ${connections} connections to server ${i}`);
    timed += timedHere;
    // Each keep-alive tick has its timer; a timed call's reply deadline may arm its
    // connection's, and that timer, firing while a call is pending, arms itself again
    // (at most once per reply timeout, 2 s, per connection).
    timedTimers += (delta.role ?? 0) + 2 * ((delta['config|get'] ?? 0) + (delta.ping ?? 0)) + (i ? Math.ceil(elapsedS) : 0);
  }
  const timersPerPair = TIMERS_PER_PAIR[name];
  assert.ok(
    timers >= timersPerPair * PAIRS && timers <= timersPerPair * PAIRS + timedTimers,
    `${PAIRS} pairs set ${timers} timers (${timedTimers} of them may be timed calls)`,
  );
  // A timed call (ROLE, PING, CONFIG GET) makes a few promises of its own: 10 each at most.
  const promisesPerPair = PROMISES_PER_PAIR[name];
  const timedPromises = PROMISES_ONCE + 10 * timed;
  assert.ok(
    promises >= promisesPerPair * PAIRS && promises <= promisesPerPair * PAIRS + timedPromises,
    `${PAIRS} pairs made ${promises} promises, ${promisesPerPair * PAIRS} expected (+ up to ${timedPromises} for timed calls)`,
  );
  // A timed call writes a few entries of its own (a ROLE read, a PING's): 4 each at most.
  const writesPerPair = REGISTRY_WRITES_PER_PAIR[name];
  if (writesPerPair !== null) {
    assert.ok(
      writes >= writesPerPair * PAIRS && writes <= writesPerPair * PAIRS + 4 * timed,
      `${PAIRS} pairs wrote a Map or Set ${writes} times, ${writesPerPair * PAIRS} expected (+ up to ${4 * timed} for timed calls)`,
    );
  }
}

for (const lib of LIBS) {
  describe(`the cost of an uncontended pair with ${lib}`, () => {
    const f = fixture(lib, 'costs');

    it(`Mutex: two commands, no new connection, ${TIMERS_PER_PAIR.Mutex} timers`, async () => {
      const mutex = new Mutex(f.clients[0], f.key('Mutex'));
      await checkCosts('Mutex', { acquire: () => mutex.acquire(), release: () => mutex.release() }, [f.redis]);
    });

    it(`Redlock: two commands, no new connection, ${TIMERS_PER_PAIR.Redlock} timers`, async () => {
      await checkCosts('Redlock', redlockHolder([f.clients[0]], f.key('Redlock')), [f.redis]);
    });
  });

  describe(`the cost of an uncontended Redlock pair over three servers with ${lib}`, () => {
    let servers: Server[];
    let clients: any[];
    let admins: Redis[];
    before(async () => {
      servers = await Promise.all([0, 1, 2].map(() => Server.start()));
      clients = await Promise.all(servers.map((s) => connect(lib, s.port)));
      admins = await Promise.all(servers.map((s) => admin(s.port)));
    });
    after(async () => {
      await Promise.all(clients.map(disconnect));
      for (const redis of admins) redis.disconnect();
      for (const server of servers) server.kill();
    });

    it('two commands on each server, no new connection, no timer', async () => {
      const holder = redlockHolder(clients, 'costs:redlock3');
      await checkCosts('Redlock over three servers', holder, admins);
    });
  });
}
