package rlock;

import java.io.IOException;
import rlock.resp.RespError;

/**
 * The watchdog holdings a {@link Node} carries across its sessions: bound to each new session
 * ({@code RENEW key owner PX lease WATCHDOG}: 1 still held; an error of a failover under way
 * decides nothing; anything else lost), and given up as lost when the node stayed unreachable for a whole
 * lease.
 */
final class Rebind {
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
            if (!Long.valueOf(1).equals(reply)) {
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
