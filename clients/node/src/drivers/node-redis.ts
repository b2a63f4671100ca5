/** The node-redis (v5) adapter: `duplicate()` without reconnects or offline queue. */

import { ConnectionFailure } from '../errors';
import { Arg, Connection, Driver, Once, connected, failure } from './driver';

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
  return (
    client != null &&
    typeof client.duplicate === 'function' &&
    typeof client.sendCommand === 'function' &&
    'isOpen' in client
  );
}

class NodeRedisConnection implements Connection {
  private readonly down = new Once();

  constructor(private readonly redis: NodeRedisLike) {
    // With reconnects off, a dropped socket is reported as `error` and leaves the client
    // closed; `end` comes after destroy().
    redis.on('error', () => {
      setImmediate(() => {
        if (!this.redis.isOpen) this.down.fire();
      });
    });
    redis.on('end', () => this.down.fire());
  }

  async send(args: Arg[]): Promise<unknown> {
    if (this.down.done) throw new ConnectionFailure('the connection is closed');
    try {
      const reply = await this.redis.sendCommand(
        args.map((arg) => (typeof arg === 'number' ? String(arg) : arg)),
      );
      return reply;
    } catch (err) {
      throw failure(err);
    }
  }

  async subscribe(channel: string, listener: (message: Buffer) => void): Promise<void> {
    try {
      await this.redis.subscribe(channel, (message) => listener(message), true);
    } catch (err) {
      throw failure(err);
    }
  }

  onDown(listener: () => void): void {
    this.down.add(listener);
  }

  close(): void {
    try {
      if (this.redis.isOpen) this.redis.destroy();
    } catch {
      // already closed
    }
    this.down.fire();
  }
}

export class NodeRedisDriver implements Driver {
  readonly library = 'node-redis' as const;

  constructor(private readonly client: NodeRedisLike) {}

  async open(name = 'rlock'): Promise<Connection> {
    const options = this.client.options ?? {};
    const redis = this.client.duplicate({
      socket: { ...(options.socket ?? {}), reconnectStrategy: false },
      disableOfflineQueue: true,
      name,
    });
    return connected(new NodeRedisConnection(redis), () => redis.connect());
  }

  onClientEnd(listener: () => void): void {
    this.client.once('end', listener);
  }
}
