package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import io.rlock.RLockException;
import io.rlock.RLockOptions;
import io.rlock.internal.transport.Connection;
import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.SessionSettings;
import io.rlock.internal.transport.Transport;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The engine's own transport ({@code RLockClient.create(uri)}): its RESP connections, Sentinel
 * discovery ({@link Sentinels}) and the Cluster slot map read with {@code CLUSTER SLOTS} on one
 * unnamed control connection. It exists until the transports over the users' clients cover
 * what it does (issue 41); the engine sees only the {@link Transport} it implements.
 *
 * <p>A server is taken as standalone until a {@link #refresh()} reads a slot map from it (the
 * engine refreshes once at start and after a {@code MOVED}).
 */
public final class RespTransport implements Transport {
    private final RedisUri uri;
    private final RespConnection.Settings settings;
    private final Sentinels sentinels;
    /** Standalone and Sentinel: the primary (Sentinel: as last named). */
    private volatile NodeAddress primary;
    private final AtomicReferenceArray<NodeAddress> slots = new AtomicReferenceArray<>(Cluster.SLOTS);
    private volatile boolean cluster;
    /** Cluster: the connection {@code CLUSTER SLOTS} is read on, or null. */
    private RespConnection control;

    public RespTransport(RedisUri uri, RLockOptions options) {
        this.uri = uri;
        this.settings = new RespConnection.Settings().uri(uri, options.sslSocketFactory())
                .verifyHostname(options.verifyHostname()).protocol(options.protocol())
                .connectTimeout(options.connectTimeout()).responseTimeout(options.responseTimeout());
        if (uri.masterName != null) {
            sentinels = new Sentinels(uri.masterName, uri.sentinels, settings, options.sentinelUser(), options.sentinelPassword());
            String[] named = sentinels.primary();
            if (named == null) {
                throw new RLockException("SENTINEL", "no sentinel of " + sentinels + " names a primary (last: "
                        + sentinels.lastFailure() + ")");
            }
            primary = new NodeAddress(named[0], Integer.parseInt(named[1]));
        } else {
            sentinels = null;
            primary = new NodeAddress(uri.host, uri.port);
        }
    }

    @Override
    public Topology topology() {
        return sentinels != null ? Topology.SENTINEL : cluster ? Topology.CLUSTER : Topology.STANDALONE;
    }

    @Override
    public int database() {
        return settings.db();
    }

    @Override
    public NodeAddress nodeFor(String key) {
        if (!cluster) {
            return primary;
        }
        NodeAddress node = slots.get(Cluster.slot(key));
        return node != null ? node : primary;
    }

    @Override
    public List<NodeAddress> primaries() {
        if (!cluster) {
            return List.of(primary);
        }
        Set<NodeAddress> primaries = new LinkedHashSet<>();
        for (int slot = 0; slot < Cluster.SLOTS; slot++) {
            NodeAddress node = slots.get(slot);
            if (node != null) {
                primaries.add(node);
            }
        }
        return new ArrayList<>(primaries);
    }

    @Override
    public boolean refresh() {
        if (sentinels != null) {
            String[] named = sentinels.primary();
            if (named == null) {
                return false;
            }
            primary = new NodeAddress(named[0], Integer.parseInt(named[1]));
            return true;
        }
        return readSlots();
    }

    /** {@code CLUSTER SLOTS} from the first node that answers (the control connection's first). */
    private synchronized boolean readSlots() {
        List<NodeAddress> candidates = new ArrayList<>();
        if (control != null && control.isOpen()) {
            candidates.add(new NodeAddress(control.host(), control.port()));
        }
        candidates.addAll(primaries());
        candidates.add(new NodeAddress(uri.host != null ? uri.host : primary.host(), uri.host != null ? uri.port : primary.port()));
        for (NodeAddress node : new LinkedHashSet<>(candidates)) {
            Object reply;
            try {
                if (control == null || !control.isOpen() || !control.host().equals(node.host()) || control.port() != node.port()) {
                    closeControl();
                    control = RespConnection.open(settings.copy().address(node.host(), node.port()).listener(new Connection.Listener() {
                    }));
                }
                reply = control.call("CLUSTER", "SLOTS");
            } catch (IOException | RuntimeException e) {
                closeControl();
                continue;
            }
            if (!(reply instanceof List<?> ranges) || ranges.isEmpty()) {
                if (!cluster) {
                    closeControl(); // a standalone server: nothing to keep open
                    return true;
                }
                continue;
            }
            for (Object entry : ranges) {
                List<?> range = (List<?>) entry;
                List<?> owner = (List<?>) range.get(2);
                String host = RespConnection.text(owner.get(0));
                NodeAddress address = new NodeAddress(host.isEmpty() ? node.host() : host, number(owner.get(1)));
                for (int slot = number(range.get(0)); slot <= number(range.get(1)); slot++) {
                    slots.set(slot, address);
                }
            }
            cluster = true;
            return true;
        }
        return false;
    }

    private static int number(Object value) {
        return value instanceof Long n ? n.intValue() : Integer.parseInt(RespConnection.text(value));
    }

    private void closeControl() {
        if (control != null) {
            control.close();
            control = null;
        }
    }

    @Override
    public Connection open(SessionSettings session) throws IOException {
        return RespConnection.open(settings.copy().address(session.node().host(), session.node().port())
                .listener(session.listener()).clientName(session.clientName()).responseTimeout(session.responseTimeout()));
    }

    @Override
    public synchronized void close() {
        closeControl();
    }

    @Override
    public String toString() {
        return sentinels != null ? sentinels.toString() : uri.toString();
    }
}
