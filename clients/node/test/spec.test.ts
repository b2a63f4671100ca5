/**
 * The shared behaviour specification (clients/spec): every scenario through rlock's public
 * API, one test per scenario named `<file>.<name>`, over ioredis and node-redis (RESP3).
 * What the steps mean is clients/spec/README.md; the op table is spec-ops.ts, the matching of
 * expectations is here. Scenarios needing a capability the helper lacks are skipped by name.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createClient } from 'redis';
import Redis from 'ioredis';
import { ACTOR_OPS, Actor, Step, kindOf, lostKey } from './spec-ops';
import { REPO, Server, sleep } from './support';
import { Topology } from './topology';

const SPEC = path.join(REPO, 'clients/spec');
/** Capabilities of the Node helper. */
const SUPPORTED = new Set(['cancel', 'confirmation', 'drop_reply']);
/** The newest scenario-file version this runner reads (clients/spec/CONTRACT.md R1). */
const SCHEMA_VERSION = '1.0';
/** Known drifts (clients/spec/README.md): scenario -> what the helper does instead. */
const DRIFTS = new Map<string, string>();
const AWAIT_DEFAULT_MS = 5000;
const JOIN_CAP_MS = 30_000;
const LIBS = (process.env.SPEC_LIBS ?? 'ioredis,node-redis').split(',');
const ONLY = process.env.SPEC_ONLY;

// check.py validates every file (the schema and the README's rules): a malformed file fails loudly.
execFileSync('python3', [path.join(SPEC, 'check.py')], { stdio: ['ignore', 'ignore', 'inherit'] });

type Named = { name: string; scenario: Record<string, any> };

/** A scenario file's content; a file of a newer schemaVersion than SCHEMA_VERSION, or of none,
 * is refused (CONTRACT.md R1): never run, never skipped. */
function readSpecFile(file: string): Record<string, any> {
  const content = JSON.parse(readFileSync(file, 'utf8'));
  const version = content?.schemaVersion;
  const parts = typeof version === 'string' ? /^(\d+)\.(\d+)$/.exec(version) : null;
  if (!parts) throw new Error(`${path.basename(file)}: refused: schemaVersion ${JSON.stringify(version)} is not <major>.<minor>`);
  const [major, minor] = SCHEMA_VERSION.split('.').map(Number);
  const [fileMajor, fileMinor] = [Number(parts[1]), Number(parts[2])];
  if (fileMajor > major || (fileMajor === major && fileMinor > minor)) {
    throw new Error(`${path.basename(file)}: refused: schemaVersion ${version} is newer than ${SCHEMA_VERSION}`);
  }
  return content;
}

/** Every scenario of the scenario files in `dir`, named `<file>.<name>`. */
function scenariosIn(dir: string): Named[] {
  const found: Named[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json') && f !== 'schema.json')
    .sort()) {
    const stem = file.slice(0, -'.json'.length);
    for (const scenario of readSpecFile(path.join(dir, file)).scenarios) {
      const name = `${stem}.${scenario.name}`;
      if (!ONLY || name.startsWith(ONLY)) found.push({ name, scenario });
    }
  }
  return found;
}

const scenarios = scenariosIn(SPEC);
/** Scenarios whose expectations are deliberately wrong (CONTRACT.md R2): each must fail here. */
const mustFail = scenariosIn(path.join(SPEC, 'valid-fail'));

describe('spec files', () => {
  it('a newer schemaVersion is refused', () => {
    assert.throws(
      () => readSpecFile(path.join(SPEC, 'invalid/newer-schema.json')),
      /newer-schema.json: refused: schemaVersion 2.0 is newer than 1.0/,
    );
  });
  for (const file of readdirSync(path.join(SPEC, 'invalid')).filter((f) => f.endsWith('.json'))) {
    it(`invalid/${file} is refused`, () => {
      assert.throws(() => readSpecFile(path.join(SPEC, 'invalid', file)), /refused: schemaVersion/);
    });
  }
});

let users = 0;

/** The `replicated` topology (a primary and one replica), started at the first scenario that needs it. */
let replicated: Promise<Topology> | null = null;
after(async () => {
  if (replicated) await (await replicated).stop();
});

async function actorClient(lib: string, port: number, user: string): Promise<any> {
  if (lib === 'ioredis') {
    const client = new Redis({ port, host: '127.0.0.1', username: user, password: 'spec', lazyConnect: true, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    await client.connect();
    return client;
  }
  const client = createClient({ RESP: 3, username: user, password: 'spec', socket: { port, host: '127.0.0.1', reconnectStrategy: false } });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** An INFO reply as an object of its `field:value` lines (integers as numbers). */
function parseInfo(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (line.startsWith('#') || at < 0) continue;
    const value = line.slice(at + 1);
    out[line.slice(0, at)] = /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return out;
}

class Failed extends Error {}

/** One scenario being run. */
class Run {
  readonly saved = new Map<string, unknown>();
  readonly actors = new Map<string, Actor>();
  paused: number[] = [];
  readonly background = new Map<string, { promise: Promise<[unknown, string | null]>; started: number; controller: AbortController }>();

  constructor(
    readonly scenario: Record<string, any>,
    readonly lib: string,
    readonly port: number,
    readonly admin: any,
    readonly topology: Topology | null = null,
  ) {}

  async command(args: string[]): Promise<any> {
    const reply = await this.admin.sendCommand(args);
    return args[0].toUpperCase() === 'INFO' ? parseInfo(String(reply)) : reply;
  }

  async start(): Promise<void> {
    await this.command(['FLUSHALL']);
    for (const [name, value] of Object.entries(this.scenario.server_config ?? {})) {
      await this.command(['CONFIG', 'SET', name, String(value)]);
    }
    for (const name of this.scenario.actors ?? []) {
      const user = `spec-${++users}-${name}`;
      await this.command(['ACL', 'SETUSER', user, 'reset', 'on', '>spec', '~*', '&*', '+@all']);
      this.actors.set(name, new Actor(name, user, `${user}:owner`, await actorClient(this.lib, this.port, user)));
    }
  }

  async finish(): Promise<void> {
    for (const port of this.paused.splice(0)) await this.topology!.resume(port);
    for (const { controller, promise } of this.background.values()) {
      controller.abort();
      await promise;
    }
    for (const actor of this.actors.values()) {
      await this.command(['ACL', 'SETUSER', actor.user, 'off']);
      await this.command(['CLIENT', 'KILL', 'USER', actor.user]);
      await actor.close();
      await this.command(['ACL', 'DELUSER', actor.user]);
    }
  }

  async step(index: number, step: Step): Promise<void> {
    const started = Date.now();
    try {
      if (step.background !== undefined) {
        const controller = new AbortController();
        this.background.set(step.background, { promise: this.outcome(step, controller.signal), started, controller });
        return;
      }
      let result: unknown;
      let error: string | null;
      let from = started;
      if (step.op === 'join' || step.op === 'cancel') {
        const running = this.background.get(step.name)!;
        this.background.delete(step.name);
        from = running.started;
        if (step.op === 'cancel') {
          running.controller.abort();
          await running.promise;
          [result, error] = [null, null];
        } else {
          let timer: NodeJS.Timeout | undefined;
          const cap = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Failed(`not done after ${JOIN_CAP_MS} ms`)), JOIN_CAP_MS);
          });
          [result, error] = await Promise.race([running.promise, cap]).finally(() => clearTimeout(timer));
        }
      } else {
        [result, error] = await this.outcome(step, new AbortController().signal);
      }
      this.check(step, result, error, started, from);
    } catch (err) {
      throw new Failed(`step ${index} (${step.op}): ${(err as Error).message}`);
    }
  }

  /** [result, error kind] of a step; an error that is no kind fails it. */
  async outcome(step: Step, signal: AbortSignal): Promise<[unknown, string | null]> {
    try {
      return [await this.perform(step, signal), null];
    } catch (err) {
      if (err instanceof Failed) throw err;
      const kind = kindOf(err, signal);
      if (kind === null || kind === 'Unsupported') {
        // A cancelled step (an AbortError) is expected: the runner aborted it.
        if (signal.aborted && (err as Error)?.name === 'AbortError') return [null, null];
        throw new Failed(`${(err as Error)?.name}: ${(err as Error)?.message}`);
      }
      return [null, kind];
    }
  }

  check(step: Step, result: unknown, error: string | null, started: number, from: number): void {
    const now = Date.now();
    if (error !== (step.error ?? null)) {
      throw new Failed(`expected ${step.error ?? 'success'}, got ${error ?? `success (${JSON.stringify(result)})`}`);
    }
    if ('expect' in step && !this.matches(step.expect, result)) {
      throw new Failed(`expected ${JSON.stringify(step.expect)}, got ${JSON.stringify(result)}`);
    }
    if (step.within_ms !== undefined && now - started > step.within_ms) {
      throw new Failed(`took ${now - started} ms, more than ${step.within_ms} ms`);
    }
    if (step.after_ms !== undefined && now - from < step.after_ms) {
      throw new Failed(`ended after ${now - from} ms, sooner than ${step.after_ms} ms`);
    }
    if (step.save !== undefined) this.saved.set(step.save, result);
  }

  value(expected: unknown): unknown {
    if (typeof expected === 'string' && expected.startsWith('$')) {
      if (!this.saved.has(expected.slice(1))) throw new Failed(`${expected} was never saved`);
      return this.saved.get(expected.slice(1));
    }
    return expected;
  }

  matches(expected: any, actual: any): boolean {
    if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
      const keys = Object.keys(expected);
      if (keys.length && keys.every((k) => k.startsWith('$'))) return keys.every((k) => this.operator(k, expected[k], actual));
      return (
        actual !== null &&
        typeof actual === 'object' &&
        !Array.isArray(actual) &&
        keys.every((k) => k in actual && this.matches(expected[k], actual[k]))
      );
    }
    if (Array.isArray(expected)) {
      return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => this.matches(e, actual[i]));
    }
    return actual === this.value(expected);
  }

  operator(op: string, operand: any, actual: any): boolean {
    if (op === '$type') {
      const type = actual === null ? 'null' : Array.isArray(actual) ? 'array' : Number.isInteger(actual) ? 'integer' : typeof actual;
      return type === operand;
    }
    if (op === '$len') return Array.isArray(actual) && actual.length === operand;
    const v = this.value(operand) as number;
    if (!Number.isInteger(actual)) return false;
    const compare: Record<string, boolean> = {
      $gt: actual > v,
      $gte: actual >= v,
      $lt: actual < v,
      $lte: actual <= v,
      $ne: actual !== v,
    };
    if (!(op in compare)) throw new Failed(`unknown operator ${op}`);
    return compare[op];
  }

  async perform(step: Step, signal: AbortSignal): Promise<unknown> {
    const op = ACTOR_OPS[step.op];
    if (op) return op(this.actors.get(step.actor)!, step, signal);
    switch (step.op) {
      case 'admin':
        return this.command(step.command);
      case 'sleep':
        await sleep(step.ms);
        return null;
      case 'await_waiters':
        return this.until(async () => (await this.waiters(step)) === step.count, step, `${step.count} waiters`);
      case 'await_lost': {
        const actor = this.actors.get(step.actor)!;
        return this.until(() => actor.lost.has(lostKey(step)), step, 'the holding reported lost');
      }
      case 'kill_connection':
        await this.command(['CLIENT', 'KILL', 'USER', this.actors.get(step.actor)!.user]);
        return null;
      case 'drop_reply': {
        // The command runs and the actor's connections close in one transaction, before any
        // reply or message of what it did reaches the actor (CONTRACT.md R3.1).
        const user = this.actors.get(step.actor)!.user;
        const replies: unknown[] = await this.admin.multi().addCommand(step.command).addCommand(['CLIENT', 'KILL', 'USER', user]).exec();
        const errors = replies.filter((reply) => reply instanceof Error);
        if (errors.length) throw new Failed(`the drop's transaction failed: ${errors.join('; ')}`);
        return null;
      }
      case 'crash': {
        const user = this.actors.get(step.actor)!.user;
        await this.command(['ACL', 'SETUSER', user, 'off']);
        await this.command(['CLIENT', 'KILL', 'USER', user]);
        return null;
      }
      case 'pause_replicas':
      case 'resume_replicas': {
        if (!this.topology) throw new Failed(`${step.op} needs the replicated topology`);
        // The ports paused are kept: a stopped replica may be missing from the topology described meanwhile.
        if (step.op === 'pause_replicas') {
          this.paused = this.topology.described.replicas.map((replica) => replica.port);
          for (const port of this.paused) await this.topology.pause(port);
        } else {
          for (const port of this.paused.splice(0)) await this.topology.resume(port);
        }
        return null;
      }
      default:
        throw new Failed(`unknown op ${step.op}`);
    }
  }

  async until(check: () => Promise<boolean> | boolean, step: Step, what: string): Promise<null> {
    const deadline = Date.now() + (step.within_ms ?? AWAIT_DEFAULT_MS);
    while (!(await check())) {
      if (Date.now() > deadline) throw new Failed(`no ${what} within ${step.within_ms ?? AWAIT_DEFAULT_MS} ms`);
      await sleep(2);
    }
    return null;
  }

  async waiters(step: Step): Promise<number> {
    if (step.type === 'server') return Number((await this.command(['INFO', 'rlock'])).rlock_waiters);
    const command = { lock: 'RLOCK.INFO', rwlock: 'RWLOCK.INFO', semaphore: 'RSEM.INFO' }[step.type as string];
    if (!command) throw new Failed(`unknown await_waiters type ${step.type}`);
    const info = await this.command([command, step.key]);
    if (info === null) return 0;
    if (step.type === 'lock') return Number(info.waiters);
    if (step.type === 'rwlock') return Number(info.waiting_readers) + Number(info.waiting_writers);
    return info.waiters.length;
  }
}

for (const lib of LIBS) {
  describe(`spec over ${lib}`, () => {
    let server: Server;
    let admin: any;
    before(async () => {
      server = await Server.start();
      admin = createClient({ RESP: 3, socket: { port: server.port, host: '127.0.0.1' } });
      admin.on('error', () => {});
      await admin.connect();
    });
    after(async () => {
      await admin?.close();
      server?.kill();
    });

    for (const { name, scenario } of scenarios) {
      const missing = (scenario.requires ?? []).filter((c: string) => !SUPPORTED.has(c));
      const skip = missing.length ? `${name}: the Node helper does not support ${missing.join(', ')}` : false;
      it(name, { skip, timeout: 60_000 }, async (t) => {
        const failure = await runScenario(scenario, lib, server.port, admin);
        const drift = DRIFTS.get(name);
        if (drift) {
          if (!failure) throw new Error(`${name} passes: remove its known drift (${drift})`);
          t.todo(`XFAIL known drift: ${drift}`);
          return;
        }
        if (failure) throw failure;
      });
    }

    for (const { name, scenario } of mustFail) {
      it(`valid-fail/${name} fails`, { timeout: 60_000 }, async () => {
        const failure = await runScenario(scenario, lib, server.port, admin);
        if (!(failure instanceof Failed)) {
          throw new Error(`valid-fail/${name} passed, but its expectations are deliberately wrong: the runner did not check them`);
        }
      });
    }
  });
}

/** Runs one scenario; returns why it failed (null: it passed). */
async function runScenario(scenario: Record<string, any>, lib: string, port: number, admin: any): Promise<unknown> {
  let run = new Run(scenario, lib, port, admin);
  let replicaAdmin: any = null;
  if (scenario.topology === 'replicated') {
    replicated ??= Topology.start('replicated');
    const topology = await replicated;
    const primary = topology.described.primary!.port;
    replicaAdmin = createClient({ RESP: 3, socket: { port: primary, host: '127.0.0.1' } });
    replicaAdmin.on('error', () => {});
    await replicaAdmin.connect();
    run = new Run(scenario, lib, primary, replicaAdmin, topology);
  }
  let failure: unknown = null;
  try {
    await run.start();
    for (const [index, step] of scenario.steps.entries()) await run.step(index, step);
  } catch (err) {
    failure = err;
  } finally {
    await run.finish();
    await replicaAdmin?.close();
  }
  return failure;
}
