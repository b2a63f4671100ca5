/**
 * A second process for the tests: `node child.js <lib> <port> hold <key> <election> <candidate>`
 * connects, waits for a line on stdin, takes a watchdog Mutex on `key`, campaigns in the
 * Election `election` as `candidate` and prints `held <token> <term>`, then stays;
 * `... count <key> <counter> <n>` increments a counter `n` times under the Mutex with a GET, a
 * pause and a SET (lost updates without it).
 */

import Redis from 'ioredis';
import { Election, Mutex } from '../src';
import { Lib, connect, sleep } from './support';

async function main(): Promise<void> {
  const [lib, port, mode, key, counter, times] = process.argv.slice(2);
  const client = await connect(lib as Lib, Number(port));
  // Started ahead, so its start-up is over when its holding is killed.
  const go = () => new Promise((resolve) => process.stdin.once('data', resolve));
  if (mode === 'hold') {
    await go();
    const mutex = new Mutex(client, key);
    await mutex.acquire();
    const term = await new Election(client, counter, times).campaign();
    process.stdout.write(`held ${mutex.token} ${term}\n`);
    setInterval(() => {}, 1000);
    return;
  }
  if (mode === 'count') {
    const plain = new Redis({ port: Number(port), host: '127.0.0.1' });
    const mutex = new Mutex(client, key);
    for (let i = 0; i < Number(times); i++) {
      await mutex.acquire();
      const value = Number((await plain.get(counter)) ?? 0);
      await sleep(1);
      await plain.set(counter, String(value + 1));
      await mutex.release();
    }
    process.stdout.write('done\n');
    plain.disconnect();
    client.disconnect?.();
    if (client.isOpen) client.destroy();
    return;
  }
  throw new Error(`unknown mode ${mode}`);
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
