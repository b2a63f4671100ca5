package io.rlock.bench;

import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * make bench-pairs is not in make test: this runs each workload once, briefly, on both sides, so
 * that the bench cannot rot unseen (a side that no longer builds, a waiter the hand-off cannot
 * see). Figures are checked for presence and sense, not speed.
 */
class WorkloadsSmokeTest {
    @Test
    void everyWorkloadRunsOnBothSides() throws Exception {
        Workloads workloads = new Workloads(150, 4);
        try (RedisServer server = RedisServer.start(); AdminConnection admin = server.admin()) {
            for (Side side : List.of(Side.rlock(server.uri()), Side.redisson(server.uri(), List.of()))) {
                try (side) {
                    assertThat(workloads.uncontended(side, "smoke:u").get("pairs_per_s")).as(side.name).isPositive();
                    assertThat(workloads.concurrent(side, "smoke:c").get("pairs_per_s")).as(side.name).isPositive();
                    Map<String, Double> hot = workloads.hot(side, "smoke:h");
                    assertThat(hot).as(side.name).containsKeys("acquires_per_s", "p99_ms", "max_wait_ms",
                            "max_per_contender", "min_per_contender", "unfinished_waits", "cpu_us_per_acquire");
                    assertThat(hot.get("max_per_contender")).as(side.name).isGreaterThanOrEqualTo(hot.get("min_per_contender"));
                    Map<String, Double> handoff = workloads.handoff(side, "smoke:o", admin);
                    assertThat(handoff.get("median_ms")).as(side.name).isPositive().isLessThanOrEqualTo(handoff.get("max_ms"));
                }
            }
        }
    }
}
