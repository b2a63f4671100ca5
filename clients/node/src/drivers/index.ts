import { ClusterAccess, ioredisCluster, isIoRedisCluster, isNodeRedisCluster, nodeRedisCluster } from './cluster';
import { Driver } from './driver';
import { IoRedisDriver, isIoRedis } from './ioredis';
import { NodeRedisDriver, isNodeRedis } from './node-redis';
import { NodeRedisSentinelDriver, isNodeRedisSentinel } from './sentinel';

/** The user's cluster client (ioredis `Redis.Cluster`, node-redis `createCluster`), or null. */
export function clusterAccess(client: unknown): ClusterAccess | null {
  if (isIoRedisCluster(client)) return ioredisCluster(client);
  if (isNodeRedisCluster(client)) return nodeRedisCluster(client);
  return null;
}

/** The adapter for the user's client of one node or of Sentinel's primary: ioredis or node-redis v5. */
export function driverFor(client: unknown): Driver {
  if (isNodeRedisSentinel(client)) return new NodeRedisSentinelDriver(client);
  if (isIoRedis(client)) return new IoRedisDriver(client);
  if (isNodeRedis(client)) return new NodeRedisDriver(client);
  throw new TypeError(
    'rlock: expected an ioredis instance (or Redis.Cluster) or a node-redis (v5) client (or createCluster(), createSentinel())',
  );
}
