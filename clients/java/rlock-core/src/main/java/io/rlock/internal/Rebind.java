package io.rlock.internal;

import io.rlock.*;

import java.io.IOException;
import io.rlock.internal.transport.RespError;

/**
 * The watchdog holdings a {@link Node} carries across its sessions: bound to each new session
 * ({@code RENEW key owner PX lease WATCHDOG}: 1 still held; an error of a failover under way
 * decides nothing; anything else lost), and given up as lost when the node stayed unreachable for a whole
 * lease. Under Sentinel or Cluster a node that answers "not held" may be the old primary in the
 * moments before it learns it was replaced (its session with us just closed, so it let the
 * holding go), while the new primary has it: such an answer only makes the holding a suspect,
 * and it is lost when, a maintenance round later, the key's primary as the topology names it
 * then says so too ({@link #verifySuspects}).
 */
public final class Rebind {
    private Rebind() {
    }

    /** Binds the live watchdog holdings taken on {@code node} to its new session, or reports them lost. */
    static void holdings(Engine engine, Node node, Node.Session fresh) throws IOException {
        for (Holding holding : engine.holdings().watchdogHoldings(node)) {
            Target target = holding.target;
            Object[] renew = target.family().renew(target.key(), target.owner(), holding.leaseMs, true);
            Object reply = fresh.conn.call(renew);
            if (reply instanceof RespError error && error.code().matches("READONLY|TRYAGAIN|CLUSTERDOWN|LOADING|MASTERDOWN")) {
                // A replica now, or a node that cannot answer during a failover: not a loss; the
                // holdings wait for the next session, or for the Router to move them.
                throw new IOException(error.code() + ": " + node + " cannot re-bind " + target.key() + " now (a failover)");
            }
            if (reply instanceof RespError error && error.code().matches("ASK|MOVED")) {
                reply = fresh.conn.callAsking(renew); // a holding taken on this node while it imports the slot
                if (reply instanceof RespError) {
                    continue; // its slot is served elsewhere now: the Router moves it there (ClusterSlots)
                }
            }
            if (Long.valueOf(1).equals(reply)) {
                holding.suspectedAt = 0;
            } else if (engine.holdings().releasedMeanwhile(holding)) {
                continue; // its owner's release got there first
            } else if (engine.router().followsFailovers()) {
                holding.suspect();
            } else {
                engine.holdings().lost(holding);
            }
        }
    }

    /** How long a suspect waits before the key's primary is asked: at least one maintenance round. */
    static final long SUSPECT_WAIT_NANOS = 1_000_000_000L;

    /**
     * On the maintenance thread: each holding suspected for {@link #SUSPECT_WAIT_NANOS} is re-bound
     * on the key's primary now (the slot map read again, or the sentinels asked, and the node
     * checked with {@code ROLE}): 1 keeps it (there), "not held" loses it; no primary to ask
     * yet leaves it for the next round, up to a whole lease.
     */
    static void verifySuspects(Engine engine) {
        for (Holding holding : engine.holdings().suspects()) {
            long suspected = System.nanoTime() - holding.suspectedAt;
            if (suspected < SUSPECT_WAIT_NANOS || engine.isClosed()) {
                continue;
            }
            Target target = holding.target;
            Node primary = engine.router().primaryNow(target.key());
            if (!engine.holdings().isCurrent(holding)) {
                continue; // released, or moved by the fresh slot map and re-bound there
            }
            Object reply = null;
            if (primary != null) {
                try {
                    synchronized (primary) {
                        Node.Session session = primary.sessionWithin(engine.connectTimeoutNanos());
                        reply = session.conn.call(target.family().renew(target.key(), target.owner(), holding.leaseMs, true));
                    }
                } catch (IOException | RuntimeException e) {
                    reply = null; // no answer: asked again next round
                }
            }
            if (Long.valueOf(1).equals(reply)) {
                engine.holdings().rebound(holding, primary);
            } else if (!engine.holdings().releasedMeanwhile(holding)
                    && (reply != null && !(reply instanceof RespError) || suspected >= holding.leaseMs * 1_000_000L)) {
                engine.holdings().lost(holding);
            }
        }
    }

    /** {@code node} unreachable for {@code silentMs}: a holding whose whole lease passed without contact has surely ended. */
    static void silent(Engine engine, Node node, long silentMs) {
        for (Holding holding : engine.holdings().watchdogHoldings(node)) {
            if (silentMs >= holding.leaseMs) {
                engine.holdings().lost(holding);
            }
        }
    }
}
