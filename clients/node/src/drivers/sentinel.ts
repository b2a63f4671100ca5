/**
 * node-redis `createSentinel()`: it has no `duplicate()` and keeps its options private, but the
 * clients of its primary pool are plain node-redis clients made from the user's node options
 * (password, TLS, RESP) and the address the sentinels named. Each connection of ours is a
 * duplicate of the pool's current primary client (`_execute`, which node-redis's own commands
 * go through, so it waits out its rediscovery after a failover), checked with `ROLE`: for a
 * moment after a failover the pool can still name the old primary.
 */

import { ConnectionFailure } from '../errors';
import { Connection, Driver, Once, primaryOnly } from './driver';
import { NodeRedisDriver, NodeRedisLike } from './node-redis';

/** The part of a node-redis `RedisSentinel` rlock uses. */
export interface NodeRedisSentinelLike {
  _execute<T>(isReadonly: boolean, fn: (client: NodeRedisLike) => Promise<T>): Promise<T>;
  getMasterNode(): { host: string; port: number } | undefined;
  readonly isOpen: boolean;
}

export function isNodeRedisSentinel(client: any): client is NodeRedisSentinelLike {
  return (
    client != null &&
    typeof client.getMasterNode === 'function' &&
    typeof client.getSentinelNode === 'function' &&
    typeof client._execute === 'function' &&
    typeof client.duplicate !== 'function'
  );
}

/** How often a closed sentinel client is looked for: it emits no `end` of its own. */
const CLOSED_CHECK_MS = 1000;

export class NodeRedisSentinelDriver implements Driver {
  readonly library = 'node-redis' as const;
  readonly discovers = true;
  private readonly ended = new Once();

  constructor(private readonly sentinel: NodeRedisSentinelLike) {
    // Closed for good: open once, then not (a client not connected yet is not a closed one).
    let wasOpen = sentinel.isOpen;
    const timer = setInterval(() => {
      if (this.sentinel.isOpen) wasOpen = true;
      if (this.sentinel.isOpen || !wasOpen) return;
      clearInterval(timer);
      this.ended.fire();
    }, CLOSED_CHECK_MS);
    timer.unref();
  }

  async open(name?: string): Promise<Connection> {
    if (!this.sentinel.isOpen) throw new ConnectionFailure('the sentinel client is not connected');
    let primary: NodeRedisLike;
    try {
      primary = await this.sentinel._execute(false, async (client) => client);
    } catch (err) {
      throw new ConnectionFailure(`no primary from the sentinels: ${(err as Error)?.message ?? err}`, { cause: err });
    }
    return primaryOnly(await new NodeRedisDriver(primary).open(name));
  }

  onClientEnd(listener: () => void): void {
    this.ended.add(listener);
  }
}
