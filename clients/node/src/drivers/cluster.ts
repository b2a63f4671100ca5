/**
 * Redis Cluster for both libraries: a driver per primary that opens its connections to that
 * primary while it serves slots, else to the one serving its slots *now* (a fresh
 * `CLUSTER SLOTS` at each open), so that after a failover the reconnect lands on the promoted
 * replica, where the holdings re-bind and the waits queue again. The connections themselves are the one-node adapters', made from a node
 * client of the user's cluster client with the node's address put in.
 */

import { ConnectionFailure } from '../errors';
import { Connection, Driver, primaryOnly } from './driver';
import { IoRedisDriver, IoRedisLike } from './ioredis';
import { NodeRedisDriver, NodeRedisLike } from './node-redis';

export interface Address {
  host: string;
  port: number;
}

/** What the cluster support needs of a user's cluster client, per library. */
export interface ClusterAccess {
  readonly library: 'ioredis' | 'node-redis';
  /** `CLUSTER SLOTS`, through the user's client (any node). */
  slots(): Promise<unknown>;
  /** The address the user's client has for `slot`'s primary now (its cache), if it has one. */
  cachedPrimary(slot: number): Address | undefined;
  /** A one-node driver for `address`, made from a node client of the user's client. */
  nodeDriver(address: Address): Promise<Driver>;
  onClientEnd(listener: () => void): void;
}

export function isIoRedisCluster(client: any): boolean {
  return client != null && client.isCluster === true && typeof client.nodes === 'function';
}

export function isNodeRedisCluster(client: any): boolean {
  return client != null && typeof client.getSlotMaster === 'function' && typeof client.nodeClient === 'function';
}

/** The primary of `slot` in a `CLUSTER SLOTS` reply. */
export function primaryOf(reply: unknown, slot: number): Address | undefined {
  for (const range of (reply as unknown[][]) ?? []) {
    if (Number(range[0]) <= slot && slot <= Number(range[1])) return nodeOf(range);
  }
  return undefined;
}

/** A slot `address` serves as a primary in a `CLUSTER SLOTS` reply, if it serves any. */
export function slotServedBy(reply: unknown, address: Address): number | undefined {
  for (const range of (reply as unknown[][]) ?? []) {
    if (sameAddress(nodeOf(range), address)) return Number(range[0]);
  }
  return undefined;
}

function nodeOf(range: unknown[]): Address {
  const node = range[2] as unknown[];
  return { host: String(node[0]), port: Number(node[1]) };
}

export function sameAddress(a: Address | undefined, b: Address | undefined): boolean {
  return !!a && !!b && a.port === b.port && a.host === b.host;
}

/** `MOVED 1234 host:port` or `ASK 1234 host:port`: where a Cluster node sends a key's command. */
export interface Redirection {
  kind: 'MOVED' | 'ASK';
  slot: number;
  address: Address;
}

export function parseRedirection(message: string): Redirection | null {
  const match = /^(MOVED|ASK) (\d+) (\S*):(\d+)/.exec(message);
  if (!match) return null;
  const host = match[3] || '127.0.0.1';
  return { kind: match[1] as 'MOVED' | 'ASK', slot: Number(match[2]), address: { host, port: Number(match[4]) } };
}

export function ioredisCluster(cluster: any): ClusterAccess {
  return {
    library: 'ioredis',
    slots: () => cluster.call('CLUSTER', 'SLOTS'),
    cachedPrimary(slot) {
      const name: string | undefined = cluster.slots?.[slot]?.[0];
      if (!name) return undefined;
      const at = name.lastIndexOf(':');
      return { host: name.slice(0, at), port: Number(name.slice(at + 1)) };
    },
    async nodeDriver(address) {
      const template = cluster.nodes('master')[0] ?? cluster.nodes()[0];
      if (!template) throw new ConnectionFailure('the cluster client knows no node yet');
      return new IoRedisDriver(template as IoRedisLike, address);
    },
    onClientEnd: (listener) => cluster.once('end', listener),
  };
}

export function nodeRedisCluster(cluster: any): ClusterAccess {
  return {
    library: 'node-redis',
    slots: () => cluster.sendCommand(undefined, true, ['CLUSTER', 'SLOTS']),
    cachedPrimary(slot) {
      try {
        const master = cluster.getSlotMaster(slot);
        return master ? { host: master.host, port: master.port } : undefined;
      } catch {
        return undefined;
      }
    },
    async nodeDriver(address) {
      let lastError: unknown;
      for (const master of cluster.masters ?? []) {
        try {
          return new NodeRedisDriver((await cluster.nodeClient(master)) as NodeRedisLike, address);
        } catch (err) {
          lastError = err;
        }
      }
      throw new ConnectionFailure(`no node client of the cluster client: ${(lastError as Error)?.message ?? 'none known'}`);
    },
    onClientEnd: (listener) => cluster.once('end', listener),
  };
}

/**
 * The connections of one primary: to `address` while it serves slots, else (it failed over,
 * or was never reached) to the primary of `slot`, a slot it served when last seen. Read at
 * each open from a fresh `CLUSTER SLOTS`.
 */
export class ClusterDriver implements Driver {
  readonly discovers = true;
  readonly library: 'ioredis' | 'node-redis';

  constructor(
    private readonly access: ClusterAccess,
    private slot: number,
    private address?: Address,
  ) {
    this.library = access.library;
  }

  private async slotMap(): Promise<unknown> {
    try {
      return await this.access.slots();
    } catch (err) {
      throw new ConnectionFailure(`CLUSTER SLOTS failed: ${(err as Error)?.message ?? err}`, { cause: err });
    }
  }

  async open(name?: string): Promise<Connection> {
    const reply = await this.slotMap();
    const served = this.address && slotServedBy(reply, this.address);
    const address = served !== undefined ? this.address : primaryOf(reply, this.slot);
    if (!address) throw new ConnectionFailure(`no primary serves slot ${this.slot} now`);
    this.address = address;
    this.slot = served ?? this.slot;
    return primaryOnly(await (await this.access.nodeDriver(address)).open(name));
  }

  /** Whether `slot` is served by the same primary as this driver's slot: a failover, not a migration. */
  async sameShard(slot: number): Promise<boolean> {
    const reply = await this.slotMap();
    return sameAddress(primaryOf(reply, this.slot), primaryOf(reply, slot));
  }

  onClientEnd(listener: () => void): void {
    this.access.onClientEnd(listener);
  }
}
