import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Election, Mutex } from '../src';
import { EVENTS, LIBS, Server, admin, connect, disconnect, info, record, unhandled, until } from './support';

const CHILD = path.join(__dirname, 'child.js');

function run(args: string[]) {
  const child = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

for (const lib of LIBS) {
  describe(`processes with ${lib}`, () => {
    let server: Server;
    let client: any;
    let redis: Awaited<ReturnType<typeof admin>>;

    before(async () => {
      server = await Server.start({ config: EVENTS });
      client = await connect(lib, server.port);
      redis = await admin(server.port);
    });
    after(async () => {
      await disconnect(client);
      redis.disconnect();
      server.kill();
      assert.deepEqual(unhandled, []);
    });

    it('excludes between processes: 3 processes x 25 read-pause-write increments lose none', async () => {
      const key = `proc:${lib}:lock`;
      const counter = `proc:${lib}:counter`;
      const children = [0, 1, 2].map(() => run([lib, String(server.port), 'count', key, counter, '25']));
      const codes = await Promise.all(children.map((c) => c.exited));
      assert.deepEqual(codes, [0, 0, 0], children.map((c) => c.err()).join('\n'));
      assert.equal(await redis.get(counter), '75');
    });

    it('a holder killed with -9 lets a waiter of another process in within 50 ms', async (t) => {
      const key = `proc:${lib}:kill`;
      const holder = run([lib, String(server.port), 'hold', key]);
      await until(() => holder.out().startsWith('held'), 10_000, `the child to hold (${holder.err()})`);
      const waiter = new Mutex(client, key);
      const granted = waiter.acquire().then(() => performance.now());
      await until(async () => (await info(redis, 'RLOCK.INFO', key))!.waiters === 1, 5000, 'queued');
      const killed = performance.now();
      holder.child.kill('SIGKILL');
      const at = await granted;
      const took = at - killed;
      t.diagnostic(`granted ${took.toFixed(1)} ms after kill -9`);
      assert.ok(took < 50, `granted ${took.toFixed(1)} ms after kill -9`);
      assert.ok(waiter.token! > Number(holder.out().split(' ')[1]), 'a larger token');
      await waiter.release();
      await holder.exited;
    });

    it('a leader killed with -9: the next candidate leads and two observers see it within 50 ms', async (t) => {
      const name = `proc:${lib}:election`;
      const leader = run([lib, String(server.port), 'lead', name, 'child-candidate']);
      await until(() => leader.out().startsWith('leader'), 10_000, `the child to lead (${leader.err()})`);
      const observers = await Promise.all([0, 1].map(() => connect(lib, server.port)));
      try {
        const watching = observers.map((c) => record(new Election(c, name, 'observer').observe()));
        await until(() => watching.every((w) => w.owners()[0] === 'child-candidate'), 5000, 'observed the child');
        const follower = new Election(client, name, 'follower');
        const campaign = follower.campaign();
        await until(async () => (await info(redis, 'RLOCK.INFO', name))!.waiters === 1, 5000, 'queued');
        const killed = performance.now();
        leader.child.kill('SIGKILL');
        const term = await campaign;
        const led = performance.now() - killed;
        const seen = (await Promise.all(watching.map((w) => w.when('follower')))).map((at) => at - killed);
        t.diagnostic(`led ${led.toFixed(1)} ms, observed ${seen.map((ms) => ms.toFixed(1)).join(' and ')} ms after kill -9`);
        assert.ok(led < 50, `led ${led.toFixed(1)} ms after kill -9`);
        for (const ms of seen) assert.ok(ms < 50, `observed ${ms.toFixed(1)} ms after kill -9`);
        assert.ok(term > Number(leader.out().split(' ')[1]), 'a larger term');
        await follower.resign();
        for (const w of watching) await w.stop();
      } finally {
        for (const c of observers) await disconnect(c);
      }
      await leader.exited;
    });
  });
}
