/**
 * Test fixtures: real redis-server processes with the module (free port, temp dir, PING
 * with a deadline, killed on exit), clients of both libraries, a TCP proxy that can drop a
 * connection between a command and its reply, and small helpers.
 */

import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import Redis from 'ioredis';
import { createClient } from 'redis';
import type { Leader, LeaderObserver } from '../src';

export const REPO = path.resolve(__dirname, '../../../..');
export const MODULE = process.env.RLOCK_MODULE ?? path.join(REPO, 'target/release/librlock.so');
const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a truthy value; fails after `timeoutMs`. */
export async function until<T>(check: () => Promise<T> | T, timeoutMs = 5000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** The process id of the redis-server answering on `port`, or null when none answers yet. */
async function pidOn(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const done = (pid: number | null) => {
      socket.destroy();
      resolve(pid);
    };
    socket.setTimeout(500, () => done(null));
    socket.on('error', () => done(null));
    socket.on('close', () => done(null)); // closed before a full answer (a later call is a no-op)
    socket.on('connect', () => socket.write('INFO server\r\n'));
    socket.on('data', (data) => {
      reply += data.toString();
      const match = /process_id:(\d+)/.exec(reply);
      if (match) done(Number(match[1]));
    });
  });
}

class PortTaken extends Error {
  constructor(port: number) {
    super(`port ${port} was taken by another process`);
  }
}

export class Server {
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly dir: string,
  ) {}

  /**
   * `port`: that one (a server restarted where its clients reconnect); omitted, a free one, and
   * another if a test process running beside this one took it first (suites run side by side).
   */
  static async start(options: { module?: boolean; config?: string[]; port?: number } = {}): Promise<Server> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await Server.startOn(options.port ?? (await freePort()), options);
      } catch (err) {
        if (options.port !== undefined || attempt === 5 || !(err instanceof PortTaken)) throw err;
      }
    }
  }

  private static async startOn(port: number, options: { module?: boolean; config?: string[] }): Promise<Server> {
    if (options.module !== false && !existsSync(MODULE)) {
      throw new Error(`${MODULE} is missing: build it first (cargo build --release --lib)`);
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rlock-node-'));
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
    if (options.module !== false) args.push('--loadmodule', MODULE, ...(options.config ?? []));
    const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let log = '';
    child.stdout!.on('data', (data) => (log += data));
    child.stderr!.on('data', (data) => (log += data));
    const server = new Server(port, child, dir);
    const deadline = Date.now() + 10_000;
    // Ours answers with its own pid: a server of another test process on the same port does not.
    while ((await pidOn(port)) !== child.pid) {
      if (child.exitCode !== null || Date.now() > deadline) {
        server.kill();
        await sleep(50); // the last of its output
        if (/Address already in use/.test(log)) throw new PortTaken(port);
        throw new Error(`redis-server on ${port} did not start: ${log}`);
      }
      await sleep(10);
    }
    return server;
  }

  kill(): void {
    if (running.delete(this.child)) {
      this.child.kill('SIGKILL');
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

export type Lib = 'ioredis' | 'node-redis' | 'node-redis-resp3';
export const LIBS: Lib[] = ['ioredis', 'node-redis', 'node-redis-resp3'];

/** A user's client of `lib`, connected to `port`. */
export async function connect(lib: Lib, port: number): Promise<any> {
  if (lib === 'ioredis') {
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    await client.connect();
    return client;
  }
  const RESP = lib === 'node-redis-resp3' ? 3 : 2;
  const client = createClient({ RESP, socket: { port, host: '127.0.0.1', reconnectStrategy: false } });
  client.on('error', () => {});
  await client.connect();
  return client;
}

export async function disconnect(client: any): Promise<void> {
  try {
    if (typeof client.call === 'function') client.disconnect();
    else if (client.isOpen) client.destroy();
  } catch {
    // already closed
  }
}

/** The test's own connection to the server (ioredis), for inspection. */
export async function admin(port: number): Promise<Redis> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** `RLOCK.INFO`-style flat array as an object (null when nil). */
export async function info(redis: Redis, command: string, key: string): Promise<Record<string, any> | null> {
  const reply = (await redis.call(command, key)) as any[] | null;
  if (reply === null) return null;
  const out: Record<string, any> = {};
  for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = reply[i + 1];
  return out;
}

export async function infoField(redis: Redis, section: string, name: string): Promise<number> {
  const text = (await redis.info(section)) as string;
  const line = text.split('\r\n').find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no ${name} in INFO ${section}`);
  return Number(line.split(':')[1]);
}

/** Client ids of the connections rlock opened (named `rlock`). */
export async function rlockClientIds(redis: Redis): Promise<Array<{ id: string; cmd: string; idle: number; flags: string }>> {
  const list = (await redis.client('LIST')) as string;
  return list
    .split('\n')
    .filter((line) => / name=rlock /.test(line))
    .map((line) => {
      const field = (n: string) => (line.match(new RegExp(`(?:^| )${n}=(\\S*)`)) ?? [])[1] ?? '';
      return { id: field('id'), cmd: field('cmd'), idle: Number(field('idle')), flags: field('flags') };
    });
}

/**
 * A TCP proxy in front of a server. `dropAfter(text)` arms it: the next client-to-server
 * chunk containing `text` (in any case) is forwarded, and the client's side is cut before the reply comes
 * back, while the server's side stays open (the server has not noticed yet), which is the
 * case the `ID` retry rule is for. `holdReplies()` keeps back what the server sends (a message
 * read late, as by a paused process) until `passReplies()`.
 */
export class Proxy {
  readonly port: number;
  private trigger: string | null = null;
  private readonly orphans: net.Socket[] = [];
  private readonly sockets = new Set<net.Socket>();
  /** What the server sent while held back, in order (null: not holding). */
  private held: Array<[net.Socket, Buffer]> | null = null;
  dropped = 0;

  private constructor(
    private readonly server: net.Server,
    port: number,
  ) {
    this.port = port;
  }

  static async start(target: number): Promise<Proxy> {
    let proxy!: Proxy;
    const server = net.createServer((client) => proxy.accept(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new Proxy(server, (server.address() as net.AddressInfo).port);
    return proxy;
  }

  private accept(client: net.Socket, target: number): void {
    if (this.refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target, '127.0.0.1');
    this.sockets.add(client);
    this.sockets.add(upstream);
    let swallow = false;
    client.on('data', (data) => {
      // Command names are matched in any case, as the server reads them (ioredis sends rlock's in lower case).
      if (this.trigger && data.toString('latin1').toLowerCase().includes(this.trigger)) {
        this.trigger = null;
        swallow = true;
      }
      upstream.write(data);
    });
    upstream.on('data', (data) => {
      if (swallow) {
        swallow = false;
        this.dropped++;
        this.orphans.push(upstream);
        client.destroy();
        return;
      }
      if (this.held) this.held.push([client, data]);
      else client.write(data);
    });
    client.on('error', () => {});
    upstream.on('error', () => {});
    client.on('close', () => {
      if (!this.orphans.includes(upstream)) upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  }

  /** While true, new connections are closed as soon as they are accepted (the server is "out of reach"). */
  refusing = false;

  /** Cuts every connection through the proxy, both sides (the server sees them close). */
  cut(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  /** From now on, what the server sends waits here until `passReplies()`. */
  holdReplies(): void {
    this.held ??= [];
  }

  /** Passes on what was held back, in order, and holds nothing more. */
  passReplies(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const [client, data] of held) client.write(data);
  }

  dropAfter(text: string): void {
    this.trigger = text.toLowerCase();
  }

  /** Closes the server sides left open by drops. */
  closeOrphans(): void {
    for (const socket of this.orphans.splice(0)) socket.destroy();
  }

  close(): void {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
  }
}

/** Rejections nobody handled: each suite checks there were none (rlock's background work must never leave one). */
export const unhandled: unknown[] = [];
process.on('unhandledRejection', (err) => unhandled.push(err));

/** What a suite's `fixture()` sets up: a server with the module, user clients of one library, an admin connection. */
export interface Fixture {
  server: Server;
  clients: any[];
  redis: Redis;
  /** A fresh key per call: `<prefix>:<lib>:<what>:<n>`. */
  key(what?: string): string;
}

/**
 * Registers a suite's `before`/`after`: starts a server (with `config`), connects `clients`
 * user clients of `lib` and an admin connection; afterwards closes them, kills the server and
 * checks that no rejection was left unhandled. Its fields are set once `before` has run.
 */
export function fixture(lib: Lib, prefix: string, options: { clients?: number; config?: string[] } = {}): Fixture {
  let n = 0;
  const f = { clients: [] as any[], key: (what = 'k') => `${prefix}:${lib}:${what}:${++n}` } as Fixture;
  before(async () => {
    f.server = await Server.start({ config: options.config });
    for (let i = 0; i < (options.clients ?? 1); i++) f.clients.push(await connect(lib, f.server.port));
    f.redis = await admin(f.server.port);
  });
  after(async () => {
    for (const client of f.clients) await disconnect(client);
    f.redis.disconnect();
    f.server.kill();
    assert.deepEqual(unhandled, []);
  });
  return f;
}

/** Keyspace events of rlock's class (d), with del (g) and expired (x). */
export const EVENTS = ['--notify-keyspace-events', 'Kdgx'];

/** Reads an observer in the background: each value with the time it came. */
export function record(observer: LeaderObserver) {
  const seen: Array<{ leader: Leader | null; at: number }> = [];
  const done = (async () => {
    for await (const leader of observer) seen.push({ leader, at: performance.now() });
  })();
  const owners = () => seen.map((s) => s.leader?.owner ?? null);
  const when = (owner: string, timeoutMs = 2000): Promise<number> =>
    until(() => seen.find((s) => s.leader?.owner === owner)?.at ?? 0, timeoutMs, `${owner} observed`);
  return { seen, done, owners, when, stop: () => observer.return() };
}
