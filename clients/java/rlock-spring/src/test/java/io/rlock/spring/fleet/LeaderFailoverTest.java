package io.rlock.spring.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.spring.ServerFixture;
import io.rlock.spring.integration.RLockRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two application instances elect a leader through LockRegistryLeaderInitiator on the
 * auto-configured RLockRegistry; the leader is killed with kill -9 and the other leads within a
 * second (RedisLockRegistry's lease would make it wait up to its 60 s).
 */
class LeaderFailoverTest {
    @Test
    @Timeout(180)
    void theOtherInstanceLeadsWithinASecondOfTheLeadersKill() throws Exception {
        try (ServerFixture fixture = ServerFixture.start();
                Instance a = Instance.start("a", "leader", fixture.server.port);
                Instance b = Instance.start("b", "leader", fixture.server.port)) {
            a.await("STARTED", 1, 120_000);
            b.await("STARTED", 1, 120_000);
            assertThat(a.event("REGISTRY")).startsWith("REGISTRY " + RLockRegistry.class.getName());
            ServerFixture.eventually(60_000, "one instance leads", () -> a.count("GRANTED") + b.count("GRANTED") > 0);
            Instance leader = a.count("GRANTED") > 0 ? a : b;
            Instance other = leader == a ? b : a;
            assertThat(other.count("GRANTED")).isZero();
            assertThat(fixture.lockInfo("rlock:fleet-leader").get("watchdog")).isNotNull();

            long killed = leader.kill9();
            long granted = other.await("GRANTED", 1, 30_000);
            long afterMs = granted - killed;
            System.out.println("leader killed; the other instance led " + afterMs + " ms after the kill");
            assertThat(afterMs).isLessThan(1_000);
        }
    }
}
