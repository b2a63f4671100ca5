/**
 * Runs redlock's own ava suite against rlock's Redlock: starts the servers its tests expect
 * (one instance, three instances, one cluster, three clusters: redis-server processes with the
 * module on loopback, free ports), passes their addresses to the tests, runs ava on the
 * compiled test files and stops every server, whatever the outcome.
 */

import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { Server, freePort, until } from '../../test/support';

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

    const here = __dirname;
    const root = path.resolve(here, '../../..');
    const ava = path.join(root, 'node_modules/ava/entrypoints/cli.mjs');
    const files = ['single.test.js', 'multi.test.js'].map((f) => path.relative(root, path.join(here, f)));
    const child = spawn(process.execPath, [ava, '--verbose', '--timeout=60s', ...files, ...process.argv.slice(2)], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, RLOCK_REDLOCK_SERVERS: JSON.stringify(addresses) },
    });
    return await new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
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
