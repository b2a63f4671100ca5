/** The ioredis adapter: `duplicate()` without reconnects, offline queue or resends. */

import { ConnectionFailure } from '../errors';
import { Arg, Connection, Driver, Once, connected, failure } from './driver';

/** The part of an ioredis instance rlock uses. */
export interface IoRedisLike {
  duplicate(override?: Record<string, unknown>): IoRedisLike;
  connect(): Promise<void>;
  call(command: string, ...args: Arg[]): Promise<unknown>;
  subscribe(...channels: string[]): Promise<unknown>;
  disconnect(reconnect?: boolean): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  once(event: string, listener: (...args: any[]) => void): unknown;
  status: string;
  options: Record<string, unknown>;
}

export function isIoRedis(client: any): client is IoRedisLike {
  return (
    client != null &&
    typeof client.duplicate === 'function' &&
    typeof client.call === 'function' &&
    typeof client.status === 'string' &&
    typeof client.options === 'object'
  );
}

class IoRedisConnection implements Connection {
  private readonly down = new Once();

  constructor(private readonly redis: IoRedisLike) {
    redis.on('error', () => {
      // reported through the failed calls and `end`
    });
    redis.once('end', () => this.down.fire());
  }

  async send(args: Arg[]): Promise<unknown> {
    if (this.down.done) throw new ConnectionFailure('the connection is closed');
    const [command, ...rest] = args;
    try {
      return await this.redis.call(String(command), ...rest);
    } catch (err) {
      throw failure(err);
    }
  }

  async subscribe(channel: string, listener: (message: Buffer) => void): Promise<void> {
    this.redis.on('messageBuffer', (from: Buffer, message: Buffer) => {
      if (from.toString() === channel) listener(message);
    });
    try {
      await this.redis.subscribe(channel);
    } catch (err) {
      throw failure(err);
    }
  }

  onDown(listener: () => void): void {
    this.down.add(listener);
  }

  close(): void {
    this.redis.disconnect(false);
    this.down.fire();
  }
}

export class IoRedisDriver implements Driver {
  readonly library = 'ioredis' as const;

  constructor(private readonly client: IoRedisLike) {}

  async open(name = 'rlock'): Promise<Connection> {
    const redis = this.client.duplicate({
      lazyConnect: true,
      retryStrategy: () => null,
      reconnectOnError: () => false,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectionName: name,
    });
    return connected(new IoRedisConnection(redis), () => redis.connect());
  }

  onClientEnd(listener: () => void): void {
    this.client.once('end', listener);
  }
}
