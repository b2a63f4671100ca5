/**
 * Runs redlock's own ava suite against rlock's Redlock: starts the servers its tests expect
 * (one instance, three instances, one cluster, three clusters: redis-server processes with the
 * module on loopback, free ports), passes their addresses to the tests, and runs AVA twice on
 * them: the suite unmodified (judged by check.ts against expected.ts), then our adapted copy
 * (adapted/: the holder read through the hash; every test must pass). Stops every server,
 * whatever the outcome.
 */

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Server, freePort, until } from '../../test/support';
import { check } from './check';
import type { Escape } from './escapes';
import { FAILS_BY_DESIGN } from './expected';

const CLUSTER_NODES = 3;

/**
 * A node in cluster mode. Its bus port (port + 10000) may be taken or past 65535 for the free
 * port it was given, so it is tried on a few free ports.
 */
async function startClusterNode(): Promise<Server> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await Server.start({ config: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'] });
    } catch (err) {
      if (attempt === 5) throw err;
    }
  }
}

async function startCluster(servers: Server[]): Promise<Server> {
  const nodes = await Promise.all(Array.from({ length: CLUSTER_NODES }, () => startClusterNode()));
  servers.push(...nodes);
  const create = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
    { encoding: 'utf8', timeout: 30_000 },
  );
  if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
  for (const node of nodes) {
    await until(() => {
      const info = spawnSync('redis-cli', ['-p', String(node.port), 'CLUSTER', 'INFO'], { encoding: 'utf8' });
      return info.stdout.includes('cluster_state:ok');
    }, 20_000, `cluster_state:ok on ${node.port}`);
  }
  return nodes[0];
}

/** Runs AVA on `files` (relative to this directory); its output goes through, and is returned. */
async function ava(files: string[], args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  const here = __dirname;
  const root = path.resolve(here, '../../..');
  const cli = path.join(root, 'node_modules/ava/entrypoints/cli.mjs');
  const relative = files.map((f) => path.relative(root, path.join(here, f)));
  const child = spawn(process.execPath, [cli, '--timeout=60s', ...args, ...relative], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  let output = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    output += chunk;
    process.stdout.write(chunk);
  });
  const code = await new Promise<number>((resolve) => child.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
  return { code, output };
}

const UNMODIFIED = ['single.test.js', 'multi.test.js'];
const ADAPTED = ['adapted/single.test.js', 'adapted/multi.test.js'];

/**
 * The suite as upstream wrote it. Serially (--serial), so that an error escaping a test is
 * told apart from the next test's (escapes.ts); TAP, to read each test's result.
 */
async function runUnmodified(servers: string): Promise<boolean> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rlock-redlock-'));
  try {
    const escapesFile = path.join(dir, 'escapes.jsonl');
    console.log('# redlock suite, unmodified (but for imports and server set-up)');
    const { output } = await ava(UNMODIFIED, ['--serial', '--tap'], { RLOCK_REDLOCK_SERVERS: servers, RLOCK_REDLOCK_ESCAPES: escapesFile });
    const escapes: Escape[] = existsSync(escapesFile)
      ? readFileSync(escapesFile, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line))
      : [];
    const verdict = check(output, escapes, ['single', 'multi'], FAILS_BY_DESIGN);
    console.log(`# unmodified: ${verdict.passed.length} passed, ${verdict.failedAsListed.length} failed as listed (expected.ts), ${verdict.problems.length} problem(s)`);
    for (const { title, failure } of verdict.failedAsListed) console.log(`#   failed as listed: ${title}: ${failure}`);
    for (const problem of verdict.problems) console.log(`# PROBLEM: ${problem}`);
    return verdict.problems.length === 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The unmodified run leaves the locks it stopped holding: every server starts the next run empty. */
function flushAll(servers: Server[]): void {
  for (const server of servers) {
    const flush = spawnSync('redis-cli', ['-p', String(server.port), 'FLUSHALL'], { encoding: 'utf8', timeout: 10_000 });
    if (flush.stdout.trim() !== 'OK') throw new Error(`FLUSHALL on ${server.port} failed: ${flush.stdout}${flush.stderr}`);
  }
}

async function main(): Promise<number> {
  const servers: Server[] = [];
  // test.sh's time limit ends the run with SIGTERM: the servers go with it.
  process.once('SIGTERM', () => {
    for (const server of servers) server.kill();
    process.exit(143);
  });
  try {
    const named: Record<string, Server> = {};
    const singles = ['single-instance', 'multi-instance-a', 'multi-instance-b', 'multi-instance-c'];
    const clusters = ['single-cluster', 'multi-cluster-a', 'multi-cluster-b', 'multi-cluster-c'];
    await Promise.all([
      ...singles.map(async (name) => {
        named[name] = await Server.start();
        servers.push(named[name]);
      }),
      ...clusters.map(async (name) => {
        named[name] = await startCluster(servers);
      }),
    ]);
    const addresses: Record<string, { host: string; port: number }> = { unused: { host: '127.0.0.1', port: await freePort() } };
    for (const [name, server] of Object.entries(named)) addresses[name] = { host: '127.0.0.1', port: server.port };
    const env = JSON.stringify(addresses);

    const unmodifiedOk = await runUnmodified(env);
    flushAll(servers);
    console.log('# redlock suite, adapted (ours: the holder read through the hash, so the later steps run)');
    const adapted = await ava(ADAPTED, ['--verbose'], { RLOCK_REDLOCK_SERVERS: env });
    console.log(`# unmodified run ${unmodifiedOk ? 'as listed' : 'NOT as listed'}; adapted run ${adapted.code === 0 ? 'passed' : 'FAILED'}`);
    return unmodifiedOk && adapted.code === 0 ? 0 : 1;
  } finally {
    for (const server of servers) server.kill();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
