/**
 * The Router: which node serves a key, and that node's `Session`. One node (or Sentinel's
 * primary, found by the user's client at each connect): one Session. Redis Cluster: a Session
 * per primary, each opening its connections to whoever serves its slots at that moment (a
 * fresh `CLUSTER SLOTS`), so a failover is followed as a reconnect is; `MOVED` and a primary
 * that turned replica (`READONLY`) make the Session reconnect and send again.
 */

import { ClusterAccess, ClusterDriver } from './drivers/cluster';
import { clusterAccess, driverFor } from './drivers';
import { RLockError } from './errors';
import { Session } from './session';
import { keySlot } from './slot';

export class Router {
  private static readonly routers = new WeakMap<object, Router>();

  /** The router of `client` (made at first use; a new one after the client was closed). */
  static of(client: unknown): Router {
    const existing = Router.routers.get(client as object);
    if (existing && !existing.closed) return existing;
    const router = new Router(client);
    Router.routers.set(client as object, router);
    return router;
  }

  static close(client: unknown): void {
    Router.routers.get(client as object)?.close();
  }

  closed = false;
  private readonly single: Session | null = null;
  private readonly access: ClusterAccess | null;
  private readonly sessions = new Map<string, Session>();

  private constructor(client: unknown) {
    this.access = clusterAccess(client);
    if (this.access) {
      this.access.onClientEnd(() => this.close());
    } else {
      const driver = driverFor(client);
      this.single = new Session(driver);
      driver.onClientEnd(() => this.close());
    }
  }

  get cluster(): boolean {
    return this.access !== null;
  }

  /** The Session of the node serving `key` (any node's for keyless calls). */
  session(key?: string): Session {
    if (this.single) return this.single;
    if (this.closed) return closedSession();
    const slot = key === undefined ? 0 : keySlot(key);
    const cached = this.access!.cachedPrimary(slot);
    const id = cached ? `${cached.host}:${cached.port}` : `slot:${slot}`;
    let session = this.sessions.get(id);
    if (!session || session.closed) {
      session = new Session(new ClusterDriver(this.access!, slot));
      this.sessions.set(id, session);
    }
    return session;
  }

  /** In a cluster, several keys must share a hash slot: the error that says how, else nothing. */
  checkOneSlot(keys: readonly string[], what: string): void {
    if (!this.cluster || new Set(keys.map(keySlot)).size <= 1) return;
    throw crossSlot(what);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.single?.close();
    for (const session of this.sessions.values()) session.close();
    this.sessions.clear();
  }
}

export function crossSlot(what: string): RLockError {
  return new RLockError(
    'ERR_RLOCK_CROSSSLOT',
    `rlock: the keys of ${what} are in different hash slots, which Redis Cluster cannot take in one step: put them in one hash slot with a hash tag, e.g. {order}:1 {order}:2`,
  );
}

function closedSession(): Session {
  const session = new Session(null as never);
  session.close();
  return session;
}
