package io.rlock.bench;

import io.rlock.RLock;
import io.rlock.testing.Admin;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What a waited acquisition costs, counted (issue 46: the hot lock is a chain of them; a count
 * holds where its benchmark is noisy): on the server, the ACQUIRE that waits, the grant's
 * confirming RENEW (C4.2, with the replicas' WAIT when there are some) and the RELEASE, nothing
 * else; on the client, how often the waiting thread goes off the CPU inside lock() (Linux's
 * voluntary_ctxt_switches of the thread): once, for the grant, which comes confirmed (the
 * session's I/O thread writes the RENEW as it reads the grant's message); not for the ACQUIRE's
 * WAITING reply (without replicas to wait for the ACQUIRE is written without waiting for its
 * reply), nor for the reply to a RENEW of its own. Each wake-up is a hand-off's chance to wait
 * for a CPU on a loaded machine.
 */
class WaitedCostTest {
    private static final int WAITS = 50;
    private static final Path THREAD_STATUS = Path.of("/proc/thread-self/status");

    @Test
    void aWaitedLockIsOneAcquireOneRenewOneReleaseAndWakesItsThreadOnce() throws Exception {
        assumeTrue(Files.isReadable(THREAD_STATUS), "the thread's context switches are read from Linux's /proc");
        try (RedisServer server = RedisServer.start(); AdminConnection admin = server.admin();
                Side.OurClient client = Side.ourClient(server.uri())) {
            Waits waits = Waits.of(admin, client.locks().getLock("cost:waited"));
            assertThat(waits.commands).as("commands for %d waited locks and their holder's %d", WAITS, WAITS)
                    .isEqualTo(Map.of("rlock.acquire", 2L * WAITS, "rlock.renew", (long) WAITS, "rlock.release", 2L * WAITS));
            // Session 14: 3 a wait (the ACQUIRE's reply, the grant's message, the RENEW's reply), then 2
            // (85-98 in 50 at load average 7-10); session 15: 50-53 in 50 at load 7-8. The bound leaves
            // half a wake-up a wait for what load adds (a safepoint, a contended monitor).
            assertThat(waits.switches).as("the waiting thread's voluntary context switches in %d waited lock() calls", WAITS)
                    .isLessThanOrEqualTo(WAITS * 3L / 2);
        }
    }

    @Test
    void withAReplicaTheGrantsRenewIsConfirmedByOneWait() throws Exception {
        try (Replicated servers = Replicated.start()) {
            Waits waits = Waits.of(servers.admin, servers.client.locks().getLock("cost:waited-synced"));
            // A WAIT after each ACQUIRE and RELEASE (the waiter's and the holder's), and after the grant's RENEW.
            assertThat(waits.commands).as("commands for %d waited locks and their holder's %d", WAITS, WAITS).isEqualTo(Map.of(
                    "rlock.acquire", 2L * WAITS, "rlock.renew", (long) WAITS, "rlock.release", 2L * WAITS, "wait", 5L * WAITS));
        }
    }

    /**
     * {@link #WAITS} times: this thread holds, another waits for the lock, this one releases once the server has it queued.
     * The commands leave out Confirm.auto()'s count of the replicas (ROLE), asked at most once a second whatever the
     * locks: on a loaded machine the waits take more than a second and a ROLE falls in (seen at load average 7.5: "role"=2);
     * it is checked to be at most one a started second instead.
     */
    private record Waits(Map<String, Long> commands, long switches) {
        static Waits of(AdminConnection admin, RLock lock) throws InterruptedException {
            lock.lock(); // sets up what is reused (the session, the replica count)
            lock.unlock();
            Admin.call(admin, "CONFIG", "RESETSTAT");
            long start = System.nanoTime();
            long switches = WaitedLocks.count(admin, lock, WAITS, WaitedCostTest::voluntarySwitches, false);
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            Map<String, Long> commands = new TreeMap<>(Wire.commands(admin));
            commands.remove("rlock.info"); // this test's look for the queued waiter
            Long replicaCounts = commands.remove("role");
            assertThat(replicaCounts == null ? 0 : replicaCounts).as("ROLE reads in %d s", seconds)
                    .isLessThanOrEqualTo(seconds + 1);
            return new Waits(commands, switches);
        }
    }

    private static long voluntarySwitches() {
        try {
            for (String line : Files.readAllLines(THREAD_STATUS)) {
                if (line.startsWith("voluntary_ctxt_switches:")) {
                    return Long.parseLong(line.substring("voluntary_ctxt_switches:".length()).trim());
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        throw new IllegalStateException("no voluntary_ctxt_switches in " + THREAD_STATUS);
    }
}
