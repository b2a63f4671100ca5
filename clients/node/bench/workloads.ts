/**
 * The workloads every bench pair runs, the same for both sides of a pair:
 * - uncontended: one contender, acquire then release as fast as it can (pairs/s, and the
 *   process's CPU time per pair);
 * - parallel: `contenders` contenders, each on its own client and its own key, the same loop
 *   (pairs/s of all of them together);
 * - hot lock: `contenders` contenders, each on its own client, acquire then release at once in
 *   a loop (acquires/s, p99 wait, the most and fewest acquisitions of one contender);
 * - handoff: one contender holds, another waits; the time from the release to the waiter
 *   holding (median over `handoffs`).
 * A round lasts `roundMs`; a wait still unfinished when it ends counts with its time so far.
 * The p99 is over acquisitions, so a contender that acquires again at once while others starve
 * weighs in thousands of times and a starved one once: read it with the longest wait and the
 * most and fewest acquisitions of one contender.
 */

import { performance } from 'node:perf_hooks';

/** One lock object of one side, reused for every acquisition of its contender. */
export interface Holder {
  acquire(): Promise<void>;
  release(): Promise<void>;
}

export interface Side {
  readonly name: string;
  /** A holder on the `index`-th client of the round for `key`. */
  holder(index: number, key: string): Holder;
}

export interface HotFigures {
  acquires_per_s: number;
  p99_ms: number;
  /** The longest wait, unfinished ones with their time so far: a starved contender shows here. */
  max_wait_ms: number;
  max_per_contender: number;
  min_per_contender: number;
  unfinished_waits: number;
}

export interface UncontendedFigures {
  pairs_per_s: number;
  /** The process's CPU time per pair: what a loaded machine changes least. */
  cpu_us_per_pair: number;
}

export async function uncontended(side: Side, key: string, roundMs: number): Promise<UncontendedFigures> {
  const holder = side.holder(0, key);
  // One pair first, outside the clock: connections and scripts are set up by then.
  await holder.acquire();
  await holder.release();
  let pairs = 0;
  const start = performance.now();
  const cpu = process.cpuUsage();
  while (performance.now() - start < roundMs) {
    await holder.acquire();
    await holder.release();
    pairs++;
  }
  const used = process.cpuUsage(cpu);
  return { pairs_per_s: (pairs * 1000) / (performance.now() - start), cpu_us_per_pair: (used.user + used.system) / pairs };
}

export async function parallel(side: Side, key: string, contenders: number, roundMs: number): Promise<number> {
  const holders = Array.from({ length: contenders }, (_, i) => side.holder(i, `${key}:${i}`));
  for (const holder of holders) {
    await holder.acquire();
    await holder.release();
  }
  let pairs = 0;
  let running = true;
  const start = performance.now();
  const loops = holders.map(async (holder) => {
    while (running) {
      await holder.acquire();
      await holder.release();
      pairs++;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, roundMs));
  running = false;
  const end = performance.now();
  await Promise.all(loops);
  return (pairs * 1000) / (end - start);
}

/** How long the holder keeps the lock once the waiter asked, so that it is waiting. */
const HANDOFF_HOLD_MS = 5;

export async function handoff(side: Side, key: string, handoffs: number): Promise<number> {
  const holder = side.holder(0, key);
  const waiter = side.holder(1, key);
  await waiter.acquire();
  await waiter.release();
  const times: number[] = [];
  for (let i = 0; i < handoffs; i++) {
    await holder.acquire();
    let held = 0;
    const waiting = waiter.acquire().then(() => {
      held = performance.now();
    });
    await new Promise((resolve) => setTimeout(resolve, HANDOFF_HOLD_MS));
    const released = performance.now();
    await holder.release();
    await waiting;
    times.push(held - released);
    await waiter.release();
  }
  return percentile(
    times.sort((a, b) => a - b),
    0.5,
  );
}

function percentile(sorted: number[], fraction: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

export async function hotLock(side: Side, key: string, contenders: number, roundMs: number): Promise<HotFigures> {
  const holders = Array.from({ length: contenders }, (_, i) => side.holder(i, key));
  for (const holder of holders) {
    await holder.acquire();
    await holder.release();
  }
  const waits: number[] = [];
  const counts = new Array<number>(contenders).fill(0);
  const pending = new Array<number | null>(contenders).fill(null);
  let running = true;
  const start = performance.now();
  const loops = holders.map(async (holder, i) => {
    while (running) {
      const asked = performance.now();
      pending[i] = asked;
      await holder.acquire();
      pending[i] = null;
      if (!running) {
        await holder.release();
        break;
      }
      waits.push(performance.now() - asked);
      counts[i]++;
      await holder.release();
    }
  });
  await new Promise((resolve) => setTimeout(resolve, roundMs));
  running = false;
  const end = performance.now();
  const unfinished = pending.filter((asked): asked is number => asked !== null).map((asked) => end - asked);
  await Promise.all(loops);
  const all = [...waits, ...unfinished].sort((a, b) => a - b);
  return {
    acquires_per_s: (waits.length * 1000) / (end - start),
    p99_ms: percentile(all, 0.99),
    max_wait_ms: all.length ? all[all.length - 1] : NaN,
    max_per_contender: Math.max(...counts),
    min_per_contender: Math.min(...counts),
    unfinished_waits: unfinished.length,
  };
}
