/** The ioredis adapter: `duplicate()` without reconnects, offline queue or resends. */

import { Arg, Connection, Driver, LibraryConnection, connected } from './driver';

/** The part of an ioredis instance rlock uses. */
export interface IoRedisLike {
  duplicate(override?: Record<string, unknown>): IoRedisLike;
  connect(): Promise<void>;
  call(command: string, ...args: Array<Arg | Arg[]>): Promise<unknown>;
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

/** rlock's command names, lower-cased once each. */
const lowerCaseNames = new Map<Arg, string>();

/**
 * The command's name in lower case: ioredis looks a command up by its name five times or more
 * per call (subscriber mode, blocking, handshake, ...), lower-casing it each time; an upper-case
 * `RLOCK.ACQUIRE` made a new string each time (the profile's `checkFlag`, docs/benchmark.md).
 * The server reads names in any case.
 */
function lowerCaseName(name: Arg): string {
  let lower = lowerCaseNames.get(name);
  if (lower === undefined) {
    // As a property name, the string is internalized (V8's table of unique strings): ioredis's
    // lookups by name then compare pointers instead of hashing a fresh string each time.
    lower = Object.keys({ [String(name).toLowerCase()]: true })[0];
    // rlock sends a few dozen names; anything else is lower-cased per call, not remembered.
    if (typeof name === 'string' && lowerCaseNames.size < 100) lowerCaseNames.set(name, lower);
  }
  return lower;
}

class IoRedisConnection extends LibraryConnection {
  constructor(private readonly redis: IoRedisLike) {
    super();
    redis.on('error', () => {
      // reported through the failed calls and `end`
    });
    redis.once('end', () => this.down.fire());
  }

  protected sendCommand(args: Arg[]): Promise<unknown> {
    // ioredis flattens an array of arguments itself: the words are not copied twice more
    // (destructured, then spread) on every command.
    return this.redis.call(lowerCaseName(args[0]), args.slice(1));
  }

  protected async subscribeTo(channel: string, listener: (message: Buffer) => void): Promise<void> {
    this.redis.on('messageBuffer', (from: Buffer, message: Buffer) => {
      if (from.toString() === channel) listener(message);
    });
    await this.redis.subscribe(channel);
  }

  protected closeClient(): void {
    this.redis.disconnect(false);
  }
}

export class IoRedisDriver implements Driver {
  readonly library = 'ioredis' as const;
  readonly discovers: boolean;

  /** `node`: connections to that address instead of the client's (a cluster node). */
  constructor(
    private readonly client: IoRedisLike,
    private readonly node?: { host: string; port: number },
  ) {
    this.discovers = Array.isArray(client.options.sentinels) && client.options.sentinels.length > 0;
  }

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
      ...(this.node ? { host: this.node.host, port: this.node.port, readOnly: false } : {}),
    });
    return connected(new IoRedisConnection(redis), () => redis.connect());
  }

  onClientEnd(listener: () => void): void {
    this.client.once('end', listener);
  }
}
