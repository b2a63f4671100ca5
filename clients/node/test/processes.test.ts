import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Election, Mutex } from '../src';
import { EVENTS, LIBS, connect, disconnect, fixture, info, record, until } from './support';

const CHILD = path.join(__dirname, 'child.js');

function run(args: string[]) {
  const child = spawn(process.execPath, [CHILD, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  /** `hold`: take the lock and lead now; resolves with the token and the term it printed. */
  const start = async (): Promise<[number, number]> => {
    child.stdin.write('go\n');
    await until(() => /^held \d+ \d+\n/.test(out), 10_000, `the child to hold (${err})`);
    const [, token, term] = out.split(' ');
    return [Number(token), Number(term)];
  };
  return { child, out: () => out, err: () => err, exited, start };
}

/** Kill -9 handoffs vary with how long the kernel takes to end a process: the middle of 3 is judged. */
const ROUNDS = 3;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ms = (values: number[]) => values.map((v) => v.toFixed(1)).join(', ');

for (const lib of LIBS) {
  describe(`processes with ${lib}`, () => {
    const f = fixture(lib, 'proc', { config: EVENTS });

    it('excludes between processes: 3 processes x 25 read-pause-write increments lose none', async () => {
      const key = `proc:${lib}:lock`;
      const counter = `proc:${lib}:counter`;
      const children = [0, 1, 2].map(() => run([lib, String(f.server.port), 'count', key, counter, '25']));
      const codes = await Promise.all(children.map((c) => c.exited));
      assert.deepEqual(codes, [0, 0, 0], children.map((c) => c.err()).join('\n'));
      assert.equal(await f.redis.get(counter), '75');
    });

    it('a process killed with -9 holding a Mutex and leading: the waiter and the next candidate get in, and two observers see it, within 1 s (median of 3)', async (t) => {
      const [key, name] = [`proc:${lib}:kill`, `proc:${lib}:election`];
      const children = Array.from({ length: ROUNDS }, (_, i) => run([lib, String(f.server.port), 'hold', key, name, `child-${i}`]));
      const observers = await Promise.all([0, 1].map(() => connect(lib, f.server.port)));
      const [granted, led] = [[] as number[], [] as number[]];
      const seen: number[][] = [[], []];
      try {
        const watching = observers.map((c) => record(new Election(c, name, 'observer').observe()));
        for (const [i, child] of children.entries()) {
          const [token, term] = await child.start();
          await until(() => watching.every((w) => w.owners().includes(`child-${i}`)), 5000, 'observed the child');
          const waiter = new Mutex(f.clients[0], key);
          const follower = new Election(f.clients[0], name, `follower-${i}`);
          const acquired = waiter.acquire().then(() => performance.now());
          const campaign = follower.campaign().then((next) => [next, performance.now()]);
          const queued = async (k: string) => (await info(f.redis, 'RLOCK.INFO', k))!.waiters === 1;
          await until(async () => (await queued(key)) && (await queued(name)), 5000, 'queued');
          const killed = performance.now();
          child.child.kill('SIGKILL');
          granted.push((await acquired) - killed);
          const [next, at] = await campaign;
          led.push(at - killed);
          for (const [j, w] of watching.entries()) seen[j].push((await w.when(follower.candidate)) - killed);
          assert.ok(waiter.token! > token, 'a larger token');
          assert.ok(next > term, 'a larger term');
          await waiter.release();
          await follower.resign();
          await child.exited;
        }
        for (const w of watching) await w.stop();
      } finally {
        for (const c of observers) await disconnect(c);
      }
      t.diagnostic(`granted ${ms(granted)}; led ${ms(led)}; observed ${ms(seen[0])} and ${ms(seen[1])} ms after kill -9`);
      // The claim is "far below the 30 s lease a client-side watchdog would leave", with a
      // bound that a loaded machine still meets; how fast it is belongs to the bench.
      assert.ok(median(granted) < 1000, `granted ${ms(granted)} ms after kill -9`);
      assert.ok(median(led) < 1000, `led ${ms(led)} ms after kill -9`);
      for (const times of seen) assert.ok(median(times) < 1000, `observed ${ms(times)} ms after kill -9`);
    });
  });
}
