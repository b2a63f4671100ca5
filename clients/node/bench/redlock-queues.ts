/**
 * Why rlock's Redlock does not wait in every server's FIFO queue: the servers are
 * independent, so nothing makes their queues agree on one order. Three contenders queued on
 * three servers in rotated orders (server 1: A B C, server 2: B C A, server 3: C A B, as
 * requests that reach the servers in different orders can leave them) are each granted one
 * server of three when the holder leaves: nobody has the majority, and each waits behind the
 * others on the two servers it lacks until the waits run out.
 *
 * What it queues instead (src/redlockqueue.ts, issue 46): one server's queue only, the first
 * configured, the same for every client. A contender waits there holding nothing; once granted
 * there it asks the others in one Redlock round (with a short wait of its own on each), and an
 * attempt that server refused as held fails whatever the others granted. So one queue gives
 * the order, only its holder waits on the others, and the split below cannot form. It stays
 * safe as Redlock is: the majority and the validity of the round are Redlock's own (every
 * lease counted was set at or after the round's start), and the queue only adds refusals;
 * with that server down or slow the attempts retry as redlock's.
 *
 * Starts three redis-server processes with the module, prints who holds each server and who
 * holds a majority, right after the release and again WATCH_MS later, and exits 0 when the
 * split was seen (every contender holding exactly one server, none a majority).
 *
 *   cd clients/node && npx tsc -p bench && node dist/bench/redlock-queues.js
 */

import Redis from 'ioredis';
import { Server } from '../test/support';

const KEY = 'redlock-queues';
const CONTENDERS = ['A', 'B', 'C'];
const WAIT_MS = 10_000;
const LEASE_MS = 60_000;
const WATCH_MS = 2_000;

/** Resolves once `subscriber` has received its `count`-th message. */
function messages(subscriber: Redis, count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    subscriber.on('message', () => {
      if (++seen === count) resolve();
    });
  });
}

async function holders(commands: Redis[]): Promise<Array<string | null>> {
  return Promise.all(
    commands.map(async (command) => {
      const info = (await command.call('RLOCK.INFO', KEY)) as unknown[] | null;
      if (!info) return null;
      const at = info.findIndex((field) => String(field) === 'owner');
      return at >= 0 ? String(info[at + 1]) : null;
    }),
  );
}

function majorities(held: Array<string | null>): string[] {
  return CONTENDERS.filter((owner) => held.filter((one) => one === owner).length >= Math.floor(held.length / 2) + 1);
}

async function main(): Promise<number> {
  const servers = await Promise.all([0, 1, 2].map(() => Server.start()));
  const clients: Redis[] = [];
  const connect = () => {
    const client = new Redis({ port: 0, host: '127.0.0.1', lazyConnect: true });
    clients.push(client);
    return client;
  };
  try {
    const commands = servers.map((server) => {
      const client = connect();
      client.options.port = server.port;
      return client;
    });
    for (const command of commands) await command.connect();
    // Each contender's subscriber on each server, as a Session keeps one per server.
    const subscribers = new Map<string, { client: Redis; id: number; granted: Promise<void> }>();
    for (const [s, server] of servers.entries()) {
      for (const owner of CONTENDERS) {
        const client = connect();
        client.options.port = server.port;
        await client.connect();
        const channel = String(await client.call('RLOCK.CHANNEL'));
        const id = Number(await client.client('ID'));
        await client.subscribe(channel);
        subscribers.set(`${owner}${s}`, { client, id, granted: messages(client, 1) });
      }
    }
    for (const command of commands) await command.call('RLOCK.ACQUIRE', KEY, 'X', 'PX', LEASE_MS);
    for (const [s, command] of commands.entries()) {
      const order = [...CONTENDERS.slice(s), ...CONTENDERS.slice(0, s)];
      for (const owner of order) {
        const reply = await command.call(
          'RLOCK.ACQUIRE',
          KEY,
          owner,
          'PX',
          LEASE_MS,
          'WAIT',
          WAIT_MS,
          'NOTIFY',
          subscribers.get(`${owner}${s}`)!.id,
        );
        if (reply !== 'WAITING') throw new Error(`server ${s + 1}: ${owner} was answered ${String(reply)}, not WAITING`);
      }
      console.log(`server ${s + 1} queue: ${order.join(' ')}`);
    }
    for (const command of commands) await command.call('RLOCK.RELEASE', KEY, 'X');
    // The first of each queue is told its grant.
    await Promise.all(commands.map((_, s) => subscribers.get(`${CONTENDERS[s]}${s}`)!.granted));
    const after = await holders(commands);
    console.log(`after the release: holders ${after.join(' ')}; a majority: ${majorities(after).join(' ') || 'nobody'}`);
    await new Promise((resolve) => setTimeout(resolve, WATCH_MS));
    const later = await holders(commands);
    console.log(`${WATCH_MS} ms later: holders ${later.join(' ')}; a majority: ${majorities(later).join(' ') || 'nobody'}`);
    const split = (held: Array<string | null>) => !majorities(held).length && CONTENDERS.every((owner) => held.includes(owner));
    return split(after) && split(later) ? 0 : 1;
  } finally {
    for (const client of clients) client.disconnect();
    for (const server of servers) server.kill();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(2);
  },
);
