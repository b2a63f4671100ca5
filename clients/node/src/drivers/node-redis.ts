/** The node-redis (v5) adapter: `duplicate()` without reconnects or offline queue. */

import { Arg, Connection, Driver, LibraryConnection, connected } from './driver';

/** The part of a node-redis client rlock uses. */
export interface NodeRedisLike {
  duplicate(overrides?: Record<string, unknown>): NodeRedisLike;
  connect(): Promise<unknown>;
  sendCommand(args: Array<string | Buffer>): Promise<unknown>;
  subscribe(channel: string, listener: (message: Buffer, channel: Buffer) => void, bufferMode: true): Promise<void>;
  destroy(): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  once(event: string, listener: (...args: any[]) => void): unknown;
  readonly isOpen: boolean;
  readonly options?: Record<string, any>;
}

export function isNodeRedis(client: any): client is NodeRedisLike {
  return client != null && typeof client.duplicate === 'function' && typeof client.sendCommand === 'function' && 'isOpen' in client;
}

class NodeRedisConnection extends LibraryConnection {
  constructor(private readonly redis: NodeRedisLike) {
    super();
    // With reconnects off, a dropped socket is reported as `error` and leaves the client
    // closed; `end` comes after destroy().
    redis.on('error', () => {
      setImmediate(() => {
        if (!this.redis.isOpen) this.down.fire();
      });
    });
    redis.on('end', () => this.down.fire());
  }

  protected sendCommand(args: Arg[]): Promise<unknown> {
    return this.redis.sendCommand(args.map((arg) => (typeof arg === 'number' ? String(arg) : arg)));
  }

  protected subscribeTo(channel: string, listener: (message: Buffer) => void): Promise<void> {
    return this.redis.subscribe(channel, (message) => listener(message), true);
  }

  protected closeClient(): void {
    if (this.redis.isOpen) this.redis.destroy();
  }
}

export class NodeRedisDriver implements Driver {
  readonly library = 'node-redis' as const;
  readonly discovers = false;

  /** `node`: connections to that address instead of the client's (a cluster node). */
  constructor(
    private readonly client: NodeRedisLike,
    private readonly node?: { host: string; port: number },
  ) {}

  async open(name = 'rlock'): Promise<Connection> {
    const options = this.client.options ?? {};
    const redis = this.client.duplicate({
      socket: { ...(options.socket ?? {}), ...(this.node ?? {}), reconnectStrategy: false },
      disableOfflineQueue: true,
      name,
    });
    return connected(new NodeRedisConnection(redis), () => redis.connect());
  }

  onClientEnd(listener: () => void): void {
    this.client.once('end', listener);
  }
}
