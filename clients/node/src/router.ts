/**
 * The Router: which node serves a key, and that node's `Session`. One node (or Sentinel's
 * primary, found at each connect): one Session. Redis Cluster: a Session per primary, each
 * opening its connections to that primary, or after a failover to whoever serves its slots (a
 * fresh `CLUSTER SLOTS`), so a failover is followed as a reconnect is. A slot that moved to
 * another primary (`MOVED`, remembered for the slot) or is moving (`ASK`, for one command,
 * after `ASKING`) sends the command to that primary's Session (`follow`).
 */

import { Address, ClusterAccess, ClusterDriver, parseRedirection } from './drivers/cluster';
import { clusterAccess, driverFor } from './drivers';
import { RLockError } from './errors';
import { Session } from './session';
import { keySlot } from './slot';

/** Where a Cluster redirection sends a command: that primary's Session, with `ASKING` for `ASK`. */
export interface Elsewhere {
  session: Session;
  asking: boolean;
}

/** How a call is routed in a Cluster. */
export interface Route {
  /** Sent right after `ASKING` (the slot is moving to this node). */
  asking?: boolean;
  /** False: a `MOVED`/`ASK` reply rejects (`ServerReply`) instead of being followed. */
  follow?: boolean;
}

/** Generations of a Session's connections (command, subscriber; -1: none was open). */
export interface Connections {
  command?: number;
  subscriber?: number;
}

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
  /** Where `MOVED` said a slot is served now (ahead of the user's client's own map). */
  private readonly moved = new Map<number, Address>();

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
    return this.sessionAt(this.moved.get(slot) ?? this.access!.cachedPrimary(slot), slot);
  }

  /** The Session of the primary at `address` (unknown: of whoever serves `slot`). */
  private sessionAt(address: Address | undefined, slot: number): Session {
    const id = address ? `${address.host}:${address.port}` : `slot:${slot}`;
    let session = this.sessions.get(id);
    if (!session || session.closed) {
      const driver = new ClusterDriver(this.access!, slot, address);
      session = new Session(driver);
      session.elsewhere = (message) => this.follow(session!, driver, message);
      this.sessions.set(id, session);
    }
    return session;
  }

  /**
   * Where a `MOVED`/`ASK` reply to `from` sends the command: another primary's Session, or
   * null when it is `from`'s own slots that moved (a failover: `from` reconnects instead).
   */
  private async follow(from: Session, driver: ClusterDriver, message: string): Promise<Elsewhere | null> {
    const redirection = parseRedirection(message);
    if (!redirection || this.closed) return null;
    const { kind, slot, address } = redirection;
    if (kind === 'MOVED') {
      this.moved.set(slot, address);
      if (await driver.sameShard(slot).catch(() => false)) return null;
    }
    const to = this.sessionAt(address, slot);
    return to === from ? null : { session: to, asking: kind === 'ASK' };
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
