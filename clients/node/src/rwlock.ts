import { Holder } from './holder';
import { AcquireOptions, Family, LockOptions, acquireOptionsOf, ownerOf } from './options';

function family(mode: 'READ' | 'WRITE'): Family {
  return {
    type: mode === 'READ' ? 'read' : 'write',
    noun: mode === 'READ' ? 'read lock' : 'write lock',
    acquire: (key, owner) => ['RWLOCK.ACQUIRE', key, owner, mode],
    release: (key, owner) => ['RWLOCK.RELEASE', key, owner, mode],
    renew: 'RWLOCK.RENEW',
  };
}

/** One side of a `ReadWriteLock`: a Mutex-like object. */
export class RWSide extends Holder {
  /** @internal */
  constructor(client: unknown, key: string, owner: string, mode: 'READ' | 'WRITE', options: LockOptions) {
    super(client, key, owner, family(mode), options);
  }

  acquire(options?: AcquireOptions): Promise<void> {
    return this.takeOrThrow(1, acquireOptionsOf(options));
  }

  tryAcquire(): Promise<boolean> {
    return this.take(1, false);
  }

  release(): Promise<void> {
    return this.give();
  }

  using<T>(fn: (signal: AbortSignal) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return this.runHeld(() => this.acquire(options), fn);
  }
}

/**
 * A fair read-write lock (`RWLOCK.*`): many readers or one writer; a reader arriving while a
 * writer waits queues behind it. `readLock()` and `writeLock()` return Mutex-like objects that
 * share this object's owner id, so a writer may also take the read lock (downgrade).
 */
export class ReadWriteLock {
  readonly owner: string;
  private readSide: RWSide | null = null;
  private writeSide: RWSide | null = null;

  constructor(
    private readonly client: unknown,
    readonly key: string,
    private readonly options: LockOptions = {},
  ) {
    this.owner = ownerOf(options);
  }

  readLock(): RWSide {
    return (this.readSide ??= new RWSide(this.client, this.key, this.owner, 'READ', this.options));
  }

  writeLock(): RWSide {
    return (this.writeSide ??= new RWSide(this.client, this.key, this.owner, 'WRITE', this.options));
  }
}
