/**
 * What an uncontended acquire+release pair costs, counted exactly (issue 46): commands on the
 * server, new connections, timers set in this process. A benchmark is noisy; a count is not, so
 * these fail the moment the uncontended path grows a round trip, a connection or a timer.
 *
 * Each case warms up first (the first pair opens the command connection and the subscriber),
 * then counts over PAIRS pairs on the suite's own server (nothing else runs commands on it).
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Mutex, Redlock } from '../src';
import { LIBS, fixture, infoField } from './support';

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
 * Timers set per pair: each command's reply deadline (cleared by the reply); Redlock adds its
 * bound on one server's vote (a server that does not even accept the connection votes against).
 */
const TIMERS_PER_PAIR = { Mutex: 2, Redlock: 3 };

async function commandCalls(redis: any): Promise<Map<string, number>> {
  const text = (await redis.info('commandstats')) as string;
  const calls = new Map<string, number>();
  for (const line of text.split('\r\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (match) calls.set(match[1], Number(match[2]));
  }
  return calls;
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

for (const lib of LIBS) {
  describe(`the cost of an uncontended pair with ${lib}`, () => {
    const f = fixture(lib, 'costs');

    const holders = {
      Mutex: (key: string) => {
        const mutex = new Mutex(f.clients[0], key);
        return { acquire: () => mutex.acquire(), release: () => mutex.release() };
      },
      Redlock: (key: string) => {
        const redlock = new Redlock([f.clients[0]], { retryCount: -1 });
        let lock: { release(): Promise<unknown> } | null = null;
        return {
          acquire: async () => {
            lock = await redlock.acquire([key], 10_000);
          },
          release: async () => {
            await lock!.release();
          },
        };
      },
    };

    for (const [name, make] of Object.entries(holders)) {
      const timersPerPair = TIMERS_PER_PAIR[name as keyof typeof holders];
      it(`${name}: two commands, no new connection, ${timersPerPair} timers`, async () => {
        const holder = make(f.key(name));
        await holder.acquire(); // warm-up: the command connection and the subscriber
        await holder.release();
        const connectionsBefore = await infoField(f.redis, 'stats', 'total_connections_received');
        const before = await commandCalls(f.redis);
        const started = Date.now();
        const timers = await timersSetDuring(async () => {
          for (let i = 0; i < PAIRS; i++) {
            await holder.acquire();
            await holder.release();
          }
        });
        const elapsedS = (Date.now() - started) / 1000;
        const after = await commandCalls(f.redis);
        const connections = (await infoField(f.redis, 'stats', 'total_connections_received')) - connectionsBefore;

        const delta: Record<string, number> = {};
        for (const [command, calls] of after) {
          const more = calls - (before.get(command) ?? 0);
          if (more) delta[command] = more;
        }
        const perPair = Object.fromEntries(Object.entries(delta).filter(([command]) => !NOT_PER_PAIR.has(command)));
        assert.deepEqual(
          perPair,
          { 'rlock.acquire': PAIRS, 'rlock.release': PAIRS },
          `commands in ${PAIRS} pairs: ${JSON.stringify(delta)}`,
        );
        const timed = TIMED.reduce((sum, command) => sum + (delta[command] ?? 0), 0);
        assert.ok(timed <= 2 * (elapsedS + 2), `${JSON.stringify(delta)} in ${elapsedS} s`);
        assert.equal(connections, 0, `${PAIRS} pairs opened ${connections} connections`);
        // Each timed call has its reply deadline, and each keep-alive tick its timer.
        const timedTimers = (delta.role ?? 0) + 2 * ((delta['config|get'] ?? 0) + (delta.ping ?? 0));
        assert.ok(
          timers >= timersPerPair * PAIRS && timers <= timersPerPair * PAIRS + timedTimers,
          `${PAIRS} pairs set ${timers} timers (${timedTimers} of them may be timed calls)`,
        );
      });
    }
  });
}
