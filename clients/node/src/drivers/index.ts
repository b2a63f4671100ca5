import { Driver } from './driver';
import { IoRedisDriver, isIoRedis } from './ioredis';
import { NodeRedisDriver, isNodeRedis } from './node-redis';

/** The adapter for the user's client: ioredis or node-redis v5 (one node, not a Cluster object). */
export function driverFor(client: unknown): Driver {
  if ((client as any)?.isCluster) {
    throw new TypeError('rlock: an ioredis Cluster is not supported; pass a client of one node');
  }
  if (isIoRedis(client)) return new IoRedisDriver(client);
  if (isNodeRedis(client)) return new NodeRedisDriver(client);
  throw new TypeError('rlock: expected an ioredis instance or a node-redis (v5) client');
}
