import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Mutex } from '../src';
import { LIBS, Server, admin, connect, disconnect, info, unhandled, until } from './support';

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
      server = await Server.start();
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
  });
}
