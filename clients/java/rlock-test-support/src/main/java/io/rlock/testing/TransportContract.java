package io.rlock.testing;

import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.LostLock;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What every transport owes the engine (io.rlock.internal.transport.Transport), checked against
 * real servers: a wait is woken by the release, not a lease; a watchdog holding keeps its binding
 * when its session connection drops (re-bound on a new one) and when a thread waiting for a reply
 * on it is interrupted ({@link InterruptedReplyWait}); a Sentinel failover and a Cluster
 * failover move the holding to the new primary, re-bound there. A transport module's test class
 * extends it and says how its client connects to each topology; the client library's own objects
 * it makes are closed in {@link #closeClients()} after each test.
 */
public abstract class TransportContract {
    /** A node's address, as the harness gives it. */
    public record HostPort(String host, int port) {
    }

    /** How long a test waits for something that must happen (it goes on as soon as it does). */
    protected static final long PATIENCE_MS = 30_000;

    /** An RLockClient over the transport to one standalone server. */
    protected abstract RLockClient standalone(HostPort server) throws Exception;

    /** An RLockClient over the transport following the primary {@code masterName} of these sentinels. */
    protected abstract RLockClient sentinel(String masterName, List<HostPort> sentinels) throws Exception;

    /** An RLockClient over the transport to the cluster these primaries belong to. */
    protected abstract RLockClient cluster(List<HostPort> primaries) throws Exception;

    /** Closes what the connect methods made in the client library (never called with a client still open). */
    protected abstract void closeClients() throws Exception;

    private final List<RLockClient> opened = new ArrayList<>();
    /** Holders' threads: the owner of a lock is the thread that took it. */
    private final ExecutorService holder = Executors.newSingleThreadExecutor();

    private RLockClient track(RLockClient client) {
        opened.add(client);
        return client;
    }

    @AfterEach
    void closeAll() throws Exception {
        holder.shutdownNow();
        opened.forEach(RLockClient::close);
        closeClients();
    }

    private <T> T onHolder(java.util.concurrent.Callable<T> work) throws Exception {
        return holder.submit(work).get(PATIENCE_MS, TimeUnit.MILLISECONDS);
    }

    @Test
    @Timeout(120)
    void aWaitIsWokenByTheReleaseNotByALease() throws Exception {
        try (RedisServer server = RedisServer.start(); AdminConnection admin = server.admin()) {
            HostPort at = new HostPort("127.0.0.1", server.port);
            RLock held = track(standalone(at)).getLock("contract:wake");
            RLock wanted = track(standalone(at)).getLock("contract:wake");
            long first = onHolder(() -> {
                held.lock();
                return held.getToken();
            });
            CompletableFuture<Long> waiter = Async.call(() -> {
                boolean got = wanted.tryLock(PATIENCE_MS, TimeUnit.MILLISECONDS);
                long token = got ? wanted.getToken() : -1;
                if (got) {
                    wanted.unlock();
                }
                return token;
            });
            eventually(PATIENCE_MS, "the waiter queued on the server", () -> Admin.waiters(admin, "contract:wake") == 1);
            long released = System.nanoTime();
            onHolder(() -> {
                held.unlock();
                return null;
            });
            long token = waiter.get(PATIENCE_MS, TimeUnit.MILLISECONDS);
            long wokenMs = (System.nanoTime() - released) / 1_000_000;
            System.out.println(getClass().getSimpleName() + ": release to the waiter's grant " + wokenMs + " ms");
            assertThat(token).as("granted with a higher token").isGreaterThan(first);
            assertThat(wokenMs).as("woken by the release, not a third of the watchdog lease later")
                    .isLessThan(new RLockOptions().watchdogLease().toMillis() / 3);
        }
    }

    @Test
    @Timeout(120)
    void aDroppedSessionKeepsItsWatchdogHoldingBound() throws Exception {
        try (RedisServer server = RedisServer.start(); AdminConnection admin = server.admin()) {
            Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "5000");
            HostPort at = new HostPort("127.0.0.1", server.port);
            RLockClient holderClient = track(standalone(at));
            List<LostLock> lost = new CopyOnWriteArrayList<>();
            holderClient.addLockLostListener(lost::add);
            RLock lock = holderClient.getLock("contract:bound");
            onHolder(() -> {
                lock.lock();
                return null;
            });
            String name = "rlock-java:" + holderClient.getId();
            List<String> before = sessionIds(admin, name);
            assertThat(before).as("one dedicated session").hasSize(1);
            String bound = String.valueOf(Admin.info(admin, "RLOCK.INFO", "contract:bound").get("watchdog"));
            assertThat(before).as("bound to the session").contains(bound);
            Admin.call(admin, "CLIENT", "KILL", "ID", bound); // a pool's or a proxy's routine close
            eventually(PATIENCE_MS, "re-bound on a new session", () -> {
                List<String> now = sessionIds(admin, name);
                Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", "contract:bound");
                return now.size() == 1 && !now.contains(bound) && info != null
                        && now.contains(String.valueOf(info.get("watchdog")));
            });
            assertThat(Async.call(() -> track(standalone(at)).getLock("contract:bound").tryLock())
                    .get(PATIENCE_MS, TimeUnit.MILLISECONDS)).as("still held").isFalse();
            assertThat(onHolder(lock::isHeldByCurrentThread)).isTrue();
            onHolder(() -> {
                lock.unlock();
                return null;
            });
            assertThat(lost).isEmpty();
        }
    }

    @Test
    @Timeout(120)
    void anInterruptWhileWaitingForAReplyLeavesTheSessionsHoldingsBound() throws Exception {
        try (RedisServer server = RedisServer.start()) {
            HostPort at = new HostPort("127.0.0.1", server.port);
            InterruptedReplyWait.check(server, track(standalone(at)), track(standalone(at)), "contract:interrupted");
        }
    }

    /**
     * The ids of the client's session connections that carry calls (and hold the bindings): under
     * RESP2 a session has a second connection, its subscriber ({@code resp=2}, subscribed), which
     * holds nothing and is left out.
     */
    private static List<String> sessionIds(AdminConnection admin, String name) {
        return Admin.clientsNamed(admin, name).stream()
                .filter(line -> !(line.contains(" resp=2") && !line.contains(" sub=0 ")))
                .map(line -> line.replaceAll("^id=(\\d+) .*$", "$1")).toList();
    }

    @Test
    @Timeout(180)
    void aSentinelFailoverRebindsTheHoldingOnTheNewPrimary() throws Exception {
        try (Topology topology = Topology.start("sentinel")) {
            List<HostPort> sentinels = new ArrayList<>();
            for (Object entry : (List<?>) topology.describe().get("sentinels")) {
                Map<?, ?> sentinel = (Map<?, ?>) entry;
                sentinels.add(new HostPort(String.valueOf(sentinel.get("host")), ((Number) sentinel.get("port")).intValue()));
            }
            String master = String.valueOf(topology.describe().get("master_name"));
            RLockClient holderClient = track(sentinel(master, sentinels));
            RLockClient other = track(sentinel(master, sentinels));
            failover(topology, holderClient, other, "contract:sentinel", () -> {
                int old = topology.primaryPort();
                topology.command("failover");
                assertThat(topology.primaryPort()).isNotEqualTo(old);
                return List.of(topology.primaryPort());
            });
        }
    }

    @Test
    @Timeout(180)
    void aClusterFailoverRebindsTheHoldingOnTheNewPrimary() throws Exception {
        try (Topology topology = Topology.start("cluster")) {
            List<HostPort> primaries = primaries(topology);
            RLockClient holderClient = track(cluster(primaries));
            RLockClient other = track(cluster(primaries));
            String key = "{contract}cluster";
            failover(topology, holderClient, other, key, () -> {
                topology.command("failover", "key", key);
                return primaries(topology).stream().map(HostPort::port).toList();
            });
        }
    }

    private static List<HostPort> primaries(Topology topology) {
        return topology.nodes().stream().filter(node -> "primary".equals(node.get("role")))
                .map(node -> new HostPort("127.0.0.1", Topology.port(node))).toList();
    }

    interface Failover {
        /** Fails the key's primary over; the primaries' ports afterwards. */
        List<Integer> run() throws Exception;
    }

    /**
     * A watchdog holding through {@code failover}: on the key's new primary it is bound to the
     * holder's session there, another client is refused, the holder's unlock works and the next
     * holder's token is higher; no loss is reported.
     */
    private void failover(Topology topology, RLockClient holderClient, RLockClient other, String key, Failover failover)
            throws Exception {
        List<LostLock> lost = new CopyOnWriteArrayList<>();
        holderClient.addLockLostListener(lost::add);
        RLock lock = holderClient.getLock(key);
        long before = onHolder(() -> {
            lock.lock();
            return lock.getToken();
        });
        List<Integer> primaries = failover.run();
        String name = "rlock-java:" + holderClient.getId();
        eventually(PATIENCE_MS, "the holding re-bound to the holder's session on the key's new primary", () -> {
            for (int port : primaries) {
                try (AdminConnection admin = Topology.admin(port)) {
                    Map<String, Object> info = Admin.info(admin, "RLOCK.INFO", key);
                    if (info != null && info.get("watchdog") != null
                            && sessionIds(admin, name).contains(String.valueOf(info.get("watchdog")))) {
                        return true;
                    }
                } catch (java.io.IOException | RuntimeException | AssertionError e) {
                    // not the key's node (MOVED), or a node still starting or stopping: asked again
                }
            }
            return false;
        });
        assertThat(Async.call(() -> other.getLock(key).tryLock()).get(PATIENCE_MS, TimeUnit.MILLISECONDS))
                .as("another client is refused on the new primary").isFalse();
        assertThat(onHolder(lock::isHeldByCurrentThread)).isTrue();
        onHolder(() -> {
            lock.unlock();
            return null;
        });
        RLock next = other.getLock(key);
        assertThat(Async.call(() -> {
            boolean got = next.tryLock(PATIENCE_MS, TimeUnit.MILLISECONDS);
            long token = got ? next.getToken() : -1;
            if (got) {
                next.unlock();
            }
            return token;
        }).get(PATIENCE_MS * 2, TimeUnit.MILLISECONDS)).as("taken on the new primary with a higher token").isGreaterThan(before);
        assertThat(lost).as("the confirmed holding survived the failover").isEmpty();
    }
}
