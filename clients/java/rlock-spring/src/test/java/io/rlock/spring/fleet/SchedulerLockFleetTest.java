package io.rlock.spring.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.spring.ServerFixture;
import io.rlock.spring.shedlock.RLockProvider;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two application instances run the same {@code @SchedulerLock} job (ticks every 200 ms, runs
 * 2.5 s (long enough that the instance seen running is still running when killed), {@code lockAtMostFor} 30 s) on the auto-configured RLockProvider: no two runs overlap,
 * and when the running instance is killed with kill -9 the other runs the job at its next tick,
 * not 30 s later.
 */
class SchedulerLockFleetTest {
    /** One run of the job, from the list the instances append to. */
    record Run(String instance, long start, long end) {
    }

    @Test
    @Timeout(180)
    void neverTwiceAtOnceAndTheOtherRunsAtItsNextTickAfterAKill() throws Exception {
        try (ServerFixture fixture = ServerFixture.start();
                Instance a = Instance.start("a", "shedlock", fixture.server.port, "fleet.job-ms=2500");
                Instance b = Instance.start("b", "shedlock", fixture.server.port, "fleet.job-ms=2500")) {
            a.await("STARTED", 1, 120_000);
            b.await("STARTED", 1, 120_000);
            assertThat(a.event("PROVIDER")).startsWith("PROVIDER " + RLockProvider.class.getName());
            // Both instances have contended for a while: several runs each way.
            ServerFixture.eventually(90_000, "four runs", () -> a.count("RUNNING") + b.count("RUNNING") >= 4);

            // Kill whichever instance is running the job now (it holds the lock mid-run).
            Instance running = null;
            while (running == null) {
                String holder = String.valueOf(fixture.lockInfo("job-lock:default:fleet-job").get("owner"));
                List<String> log = fixture.redis.opsForList().range("fleet:runs", -1, -1);
                if (!holder.equals("null") && log != null && !log.isEmpty() && log.get(0).startsWith("start ")) {
                    running = log.get(0).startsWith("start a ") ? a : b;
                }
                Thread.sleep(5);
            }
            Instance other = running == a ? b : a;
            long runsBefore = other.count("RUNNING");
            long killed = running.kill9();
            long next = other.await("RUNNING", (int) runsBefore + 1, 30_000);
            System.out.println("running instance killed; the other ran the job " + (next - killed) + " ms after");
            // Its next tick (200 ms apart) with a wide margin for a loaded machine, far below lockAtMostFor (30 s).
            assertThat(next - killed).isLessThan(5_000);
            other.await("RUNNING", (int) runsBefore + 2, 30_000);

            String killedName = running.name;
            List<Run> runs = runs(fixture.redis.opsForList().range("fleet:runs", 0, -1), killedName, killed);
            assertThat(runs).hasSizeGreaterThanOrEqualTo(5); // four before the kill, one after (the second after is still running)
            assertThat(runs).as("the killed instance was killed mid-run").anyMatch(
                    run -> run.instance().equals(killedName) && run.end() == killed);
            for (int i = 1; i < runs.size(); i++) {
                assertThat(runs.get(i).start()).as("run %s starts after run %s ends", runs.get(i), runs.get(i - 1))
                        .isGreaterThanOrEqualTo(runs.get(i - 1).end());
            }
        }
    }

    /** Pairs starts and ends; the killed instance's last run ends when the kill was sent. */
    static List<Run> runs(List<String> log, String killedName, long killed) {
        List<Run> runs = new ArrayList<>();
        String[] open = null;
        for (String entry : log) {
            String[] parts = entry.split(" ");
            if (parts[0].equals("start")) {
                if (open != null) {
                    assertThat(open[1]).as("an unfinished run is the killed instance's").isEqualTo(killedName);
                    runs.add(new Run(open[1], Long.parseLong(open[2]), killed));
                }
                open = parts;
            } else {
                assertThat(open).as("an end follows its start: %s", log).isNotNull();
                assertThat(parts[1]).as("the run that ends is the one that started: %s", log).isEqualTo(open[1]);
                runs.add(new Run(open[1], Long.parseLong(open[2]), Long.parseLong(parts[2])));
                open = null;
            }
        }
        return runs;
    }
}
