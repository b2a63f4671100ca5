/**
 * The redis servers redis-semaphore's tests use ("redis1" to "redis3" of its docker-compose):
 * real redis-server processes with the rlock module, on free ports, each in its own temp dir.
 * Its test/redisClient.ts connects to them through REDIS_URI1..3, which `startAll` sets.
 */

import { Server, admin, until } from '../../test/support';

const running = new Map<number, Server>();
const ports = new Map<number, number>();

export const SERVER_NUMBERS = [1, 2, 3];

export async function startAll(): Promise<void> {
  for (const num of SERVER_NUMBERS) {
    await start(num);
    process.env[`REDIS_URI${num}`] = `redis://127.0.0.1:${ports.get(num)}`;
  }
}

/**
 * Starts server `num`. A restart is on its first port, and returns once the suite's client of
 * that server (named `client<num>` by its test/redisClient.ts) has reconnected, as the docker
 * set-up's slower start let it: its after-all hook quits the clients without waiting.
 */
export async function start(num: number): Promise<void> {
  if (running.has(num)) return;
  const restart = ports.has(num);
  const server = await Server.start({ port: ports.get(num) });
  ports.set(num, server.port);
  running.set(num, server);
  if (!restart) return;
  const redis = await admin(server.port);
  try {
    await until(async () => String(await redis.client('LIST')).includes(` name=client${num} `), 10_000, `client${num} to reconnect`);
  } finally {
    redis.disconnect();
  }
}

/** Kills server `num` (its data goes with it, as a stopped container's does here). */
export function stop(num: number): void {
  running.get(num)?.kill();
  running.delete(num);
}

export function stopAll(): void {
  for (const num of [...running.keys()]) stop(num);
}
