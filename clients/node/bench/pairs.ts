/**
 * `make bench`'s Node pairs: our Mutex beside redis-semaphore's Mutex, our Redlock beside
 * redlock (over 3 servers), each on the same servers in the same run, rounds interleaved
 * (the side that goes first alternates). Starts its own redis-server processes with the module,
 * prints each figure's median and range, and writes every round's figures to
 * target/bench-node.json (benches/pairs.py sets the pairs side by side, with ratios).
 *
 * Environment: BENCH_REPS (rounds per side and workload, 5), BENCH_ROUND_MS (2000),
 * BENCH_CONTENDERS (16), BENCH_HANDOFFS (20), BENCH_PAIRS (all: mutex,redlock), BENCH_SIDES
 * (all: rlock,redis-semaphore,redlock; `floor` adds raw ioredis `SET NX PX` + `EVALSHA` beside
 * the Mutex, the least two commands a pair can cost), BENCH_WORKLOADS (all:
 * uncontended,parallel,handoff,hot). One side and one workload alone is what a profile
 * (`node --cpu-prof`) or `strace -c` of one side needs. BENCH_BEFORE (a directory: another
 * build of this helper's compiled `dist/src`, e.g. main's) adds the side `rlock-before` beside
 * each pair: a change's before and after, interleaved in one sitting.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { Mutex as SemaphoreMutex } from 'redis-semaphore';
import { Mutex, Redlock, closeConnections } from '../src';
import { REPO, Server } from '../test/support';
import { Holder, Side, handoff, hotLock, parallel, uncontended } from './workloads';

// redlock is an ES module with a CommonJS build whose default export is the class.
// eslint-disable-next-line @typescript-eslint/no-var-requires
const UpstreamRedlock = require('redlock').default;

const REPS = Number(process.env.BENCH_REPS ?? 5);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 2000);
const CONTENDERS = Number(process.env.BENCH_CONTENDERS ?? 16);
const HANDOFFS = Number(process.env.BENCH_HANDOFFS ?? 20);
const ONLY = process.env.BENCH_PAIRS?.split(',');
const SIDES = process.env.BENCH_SIDES?.split(',');
const WORKLOADS = new Set(process.env.BENCH_WORKLOADS?.split(',') ?? ['uncontended', 'parallel', 'handoff', 'hot']);
/** Long enough that no wait of a round gives up, for both sides. */
const ACQUIRE_TIMEOUT_MS = 120_000;
const REDLOCK_LEASE_MS = 10_000;
/** Another build of this helper (`BENCH_BEFORE`), with its own connections: the `rlock-before` side. */
// eslint-disable-next-line @typescript-eslint/no-var-requires
const BEFORE: typeof import('../src') | null = process.env.BENCH_BEFORE ? require(path.resolve(process.env.BENCH_BEFORE)) : null;

function connect(port: number): Redis {
  const client = new Redis({ port, host: '127.0.0.1' });
  client.on('error', () => {});
  return client;
}

/** A lock whose acquire() returns a handle to release: a Redlock lock of either package. */
function redlockHolder(
  redlock: { acquire(resources: string[], duration: number): Promise<{ release(): Promise<unknown> }> },
  key: string,
): Holder {
  let lock: { release(): Promise<unknown> } | null = null;
  return {
    async acquire() {
      lock = await redlock.acquire([key], REDLOCK_LEASE_MS);
    },
    async release() {
      await lock!.release();
      lock = null;
    },
  };
}

/** The least an uncontended pair can cost: ioredis's `SET NX PX` and a compare-and-delete `EVALSHA`, nothing around them. */
function floorHolder(client: Redis, key: string): Holder {
  const token = `floor:${process.pid}:${key}`;
  let sha: string | null = null;
  return {
    async acquire() {
      sha ??= (await client.script('LOAD', COMPARE_AND_DELETE)) as string;
      if ((await client.set(key, token, 'PX', REDLOCK_LEASE_MS, 'NX')) !== 'OK') throw new Error(`floor: ${key} is held`);
    },
    async release() {
      await client.evalsha(sha!, 1, key, token);
    },
  };
}

const COMPARE_AND_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

interface Pair {
  readonly name: string;
  readonly sides: Side[];
}

function pairs(single: Redis[], triples: Redis[][]): Pair[] {
  const ours = triples.map((clients) => new Redlock(clients, { retryCount: -1 }));
  const theirs = triples.map((clients) => new UpstreamRedlock(clients, { retryCount: -1 }));
  const before = BEFORE ? triples.map((clients) => new BEFORE.Redlock(clients, { retryCount: -1 })) : [];
  const rlockBefore = (holder: (i: number, key: string) => Holder): Side[] => (BEFORE ? [{ name: 'rlock-before', holder }] : []);
  return [
    {
      name: 'mutex',
      sides: [
        { name: 'rlock', holder: (i, key) => new Mutex(single[i], key, { acquireTimeout: ACQUIRE_TIMEOUT_MS }) },
        ...rlockBefore((i, key) => new BEFORE!.Mutex(single[i], key, { acquireTimeout: ACQUIRE_TIMEOUT_MS })),
        { name: 'redis-semaphore', holder: (i, key) => new SemaphoreMutex(single[i], key, { acquireTimeout: ACQUIRE_TIMEOUT_MS }) },
        { name: 'floor', holder: (i, key) => floorHolder(single[i], key) },
      ],
    },
    {
      name: 'redlock',
      sides: [
        { name: 'rlock', holder: (i, key) => redlockHolder(ours[i], key) },
        ...rlockBefore((i, key) => redlockHolder(before[i], key)),
        { name: 'redlock', holder: (i, key) => redlockHolder(theirs[i], key) },
      ],
    },
  ];
}

type Figures = Record<string, number[]>;

function record(figures: Figures, name: string, value: number): void {
  (figures[name] ??= []).push(value);
}

async function measure(pair: Pair, figures: Figures): Promise<void> {
  for (let rep = 0; rep < REPS; rep++) {
    const order = rep % 2 === 0 ? pair.sides : [...pair.sides].reverse();
    for (const side of order) {
      const prefix = `node.${pair.name}.${side.name}`;
      if (WORKLOADS.has('uncontended')) {
        for (const [figure, value] of Object.entries(await uncontended(side, `bench:${prefix}:u${rep}`, ROUND_MS))) {
          record(figures, `${prefix}.uncontended.${figure}`, value);
        }
      }
      // The floor is a single attempt: it has no wait to measure.
      if (side.name === 'floor') continue;
      if (WORKLOADS.has('parallel')) {
        record(
          figures,
          `${prefix}.parallel${CONTENDERS}.pairs_per_s`,
          await parallel(side, `bench:${prefix}:p${rep}`, CONTENDERS, ROUND_MS),
        );
      }
      if (WORKLOADS.has('handoff'))
        record(figures, `${prefix}.handoff.median_ms`, await handoff(side, `bench:${prefix}:o${rep}`, HANDOFFS));
      if (WORKLOADS.has('hot')) {
        const hot = await hotLock(side, `bench:${prefix}:h${rep}`, CONTENDERS, ROUND_MS);
        for (const [figure, value] of Object.entries(hot)) record(figures, `${prefix}.hot${CONTENDERS}.${figure}`, value);
      }
    }
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function table(figures: Figures): string {
  const rows = Object.entries(figures)
    .filter(([, values]) => Array.isArray(values))
    .map(
      ([name, values]) =>
        `${name.padEnd(62)} ${median(values).toFixed(1).padStart(10)}   [${Math.min(...values).toFixed(1)} .. ${Math.max(...values).toFixed(1)}]`,
    );
  return [`${'figure'.padEnd(62)} ${'median'.padStart(10)}   [min .. max] over ${REPS} rounds`, ...rows].join('\n');
}

async function main(): Promise<void> {
  const servers = await Promise.all([0, 1, 2].map(() => Server.start()));
  const single = Array.from({ length: CONTENDERS }, () => connect(servers[0].port));
  const triples = Array.from({ length: CONTENDERS }, () => servers.map((s) => connect(s.port)));
  const clients = [...single, ...triples.flat()];
  try {
    const figures: Figures = {};
    for (const pair of pairs(single, triples)) {
      // The floor only when asked for: it is not a library anyone replaces.
      const sides = pair.sides.filter((side) => (SIDES ? SIDES.includes(side.name) : side.name !== 'floor'));
      if ((!ONLY || ONLY.includes(pair.name)) && sides.length) await measure({ ...pair, sides }, figures);
    }
    const version = String(await single[0].info('server')).match(/redis_version:(\S+)/)?.[1] ?? '?';
    const out = path.join(REPO, 'target', 'bench-node.json');
    mkdirSync(path.dirname(out), { recursive: true });
    const meta = {
      redis_version: version,
      node_version: process.version,
      reps: REPS,
      round_ms: ROUND_MS,
      contenders: CONTENDERS,
      load_average: loadavg(),
    };
    writeFileSync(out, `${JSON.stringify({ meta, figures }, null, 1)}\n`);
    console.log(table(figures));
    console.log(`wrote ${out}`);
  } finally {
    for (const client of clients) {
      closeConnections(client);
      BEFORE?.closeConnections(client);
      client.disconnect();
    }
    for (const server of servers) server.kill();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
