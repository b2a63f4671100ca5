package io.rlock.bench;

import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.RedisServer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code make bench-pairs}' Java pair: rlock's {@code getLock} beside Redisson's, on this JVM and
 * one redis-server with the module that this program starts, rounds interleaved (the side that
 * goes first alternates). Two runs:
 * <ul>
 * <li>{@code java.lock.*}: one server alone; the four {@link Workloads};</li>
 * <li>{@code java.synced.*}: a primary with a replica beside it, each side confirming its writes
 * by the replica as it does by default (rlock: {@code Confirm.auto()}, a pipelined WAIT; Redisson:
 * {@code checkLockSyncedSlaves}, told of the replica by {@code useMasterSlaveServers()}); the
 * uncontended workloads.</li>
 * </ul>
 * Prints each figure's median and range; writes every round's figures to
 * {@code target/bench-java.json} of the repository (benches/pairs.py sets the sides side by side).
 * Environment: BENCH_REPS (5), BENCH_ROUND_MS (2000), BENCH_CONTENDERS (16), BENCH_OUT; for a
 * profile of one side and workload, BENCH_SIDES (rlock,redisson), BENCH_WORKLOADS
 * (uncontended,concurrent,hot,handoff) and BENCH_SYNCED (1: the run with a replica too).
 */
public final class Pairs {
    private static final int REPS = Integer.parseInt(System.getenv().getOrDefault("BENCH_REPS", "5"));
    private static final long ROUND_MS = Long.parseLong(System.getenv().getOrDefault("BENCH_ROUND_MS", "2000"));
    private static final int CONTENDERS = Integer.parseInt(System.getenv().getOrDefault("BENCH_CONTENDERS", "16"));

    private static final int WIRE_PAIRS = 100;
    private static final List<String> SIDES = List.of(System.getenv().getOrDefault("BENCH_SIDES", "rlock,redisson").split(","));
    private static final List<String> WORKLOADS = List.of(
            System.getenv().getOrDefault("BENCH_WORKLOADS", "uncontended,concurrent,hot,handoff").split(","));
    private static final boolean SYNCED = !"0".equals(System.getenv().getOrDefault("BENCH_SYNCED", "1"));

    private final Workloads workloads = new Workloads(ROUND_MS, CONTENDERS);
    private final Map<String, List<Double>> figures = new LinkedHashMap<>();

    public static void main(String[] args) throws Exception {
        Path out = Path.of(System.getenv().getOrDefault("BENCH_OUT", "../../target/bench-java.json")).toAbsolutePath().normalize();
        Pairs pairs = new Pairs();
        Map<String, Object> meta = new LinkedHashMap<>();
        try (RedisServer server = RedisServer.start(); AdminConnection admin = server.admin()) {
            meta.put("redis_version", Admin.infoField(admin, "server", "redis_version"));
            pairs.run("java.lock", admin, List.of(Side.rlock(server.uri()), Side.redisson(server.uri(), List.of())), true, meta);
        }
        if (SYNCED) {
            pairs.synced(meta);
        }
        meta.put("java_version", System.getProperty("java.version"));
        meta.put("redisson_version", org.redisson.Redisson.class.getPackage().getImplementationVersion());
        meta.put("reps", REPS);
        meta.put("round_ms", ROUND_MS);
        meta.put("contenders", CONTENDERS);
        meta.put("load_average", Files.readString(Path.of("/proc/loadavg")).trim());
        Files.createDirectories(out.getParent());
        Files.writeString(out, JsonOut.write(Map.of("meta", meta, "figures", pairs.figures)));
        pairs.print();
        System.out.println("wrote " + out);
    }

    /** The run with a replica beside the primary, each side confirming its writes by it. */
    private void synced(Map<String, Object> meta) throws Exception {
        try (RedisServer primary = RedisServer.start();
                RedisServer replica = RedisServer.start("--replicaof", "127.0.0.1", String.valueOf(primary.port));
                AdminConnection admin = primary.admin()) {
            awaitReplicaOnline(admin);
            run("java.synced", admin,
                    List.of(Side.rlock(primary.uri()), Side.redisson(primary.uri(), List.of(replica.uri()))), false, meta);
        }
    }

    /**
     * Until the primary's ROLE lists one replica: ROLE lists it only once it is online
     * (connected_slaves counts it earlier), and Confirm.auto() counts ROLE's list, so both sides
     * see the replica from their first call.
     */
    static void awaitReplicaOnline(AdminConnection primaryAdmin) throws InterruptedException {
        Admin.eventually(30_000, "the replica online in ROLE", () -> Admin.call(primaryAdmin, "ROLE") instanceof List<?> role
                && role.size() >= 3 && role.get(2) instanceof List<?> online && online.size() == 1);
    }

    private void run(String prefix, AdminConnection admin, List<Side> sides, boolean all, Map<String, Object> meta) throws Exception {
        sides = sides.stream().filter(side -> SIDES.contains(side.name) || close(side)).toList();
        try {
            for (Side side : sides) {
                // The JIT's first compilations, outside every round; then what a pair costs on the wire.
                workloads.uncontended(side, "bench:" + prefix + ".warmup:" + side.name);
                if (all && WORKLOADS.contains("hot")) {
                    // The waiting path's too (messages, wake-ups): without it the first hot rounds
                    // shared the 2 cores with C2 compiling it (docs/benchmark.md, session 14).
                    workloads.hot(side, "bench:" + prefix + ".warmup-hot:" + side.name);
                }
                Wire wire = Wire.count(admin, side.lock("bench:" + prefix + ".wire:" + side.name), WIRE_PAIRS);
                meta.put("wire." + prefix + "." + side.name + ".commands_per_pair", wire.perPair(WIRE_PAIRS));
                meta.put("wire." + prefix + "." + side.name + ".connections_per_" + WIRE_PAIRS + "_pairs", wire.connections);
            }
            for (int rep = 0; rep < REPS; rep++) {
                List<Side> order = new ArrayList<>(sides);
                if (rep % 2 == 1) {
                    Collections.reverse(order);
                }
                for (Side side : order) {
                    String name = prefix + "." + side.name;
                    String key = "bench:" + name + ":" + rep;
                    if (WORKLOADS.contains("uncontended")) {
                        record(name + ".uncontended", workloads.uncontended(side, key + ":u"));
                    }
                    if (WORKLOADS.contains("concurrent")) {
                        record(name + ".concurrent" + CONTENDERS, workloads.concurrent(side, key + ":c"));
                    }
                    if (all && WORKLOADS.contains("hot")) {
                        record(name + ".hot" + CONTENDERS, hotRound(side, key + ":h"));
                    }
                    if (all && WORKLOADS.contains("handoff")) {
                        record(name + ".handoff", workloads.handoff(side, key + ":o", admin));
                    }
                }
            }
        } finally {
            sides.forEach(Side::close);
        }
    }

    /**
     * One hot round, with the JVM's collections that fell inside it counted beside its figures
     * (gcs_in_round, every collector's): both sides share this JVM, and a young collection stops
     * every queued contender at once. Counted, they were ruled out as what decides the longest
     * wait: with -Xms2g none fell in any rlock round and the longest waits stayed as long
     * (docs/benchmark.md, the quiet run of session 15).
     */
    private Map<String, Double> hotRound(Side side, String key) throws Exception {
        long before = collections();
        Map<String, Double> values = new java.util.LinkedHashMap<>(workloads.hot(side, key));
        values.put("gcs_in_round", (double) (collections() - before));
        return values;
    }

    private static long collections() {
        return java.lang.management.ManagementFactory.getGarbageCollectorMXBeans().stream()
                .mapToLong(java.lang.management.GarbageCollectorMXBean::getCollectionCount).filter(count -> count > 0).sum();
    }

    /** Closes a side left out of the run (BENCH_SIDES); false, for the filter. */
    private static boolean close(Side side) {
        side.close();
        return false;
    }

    private void record(String workload, Map<String, Double> values) {
        values.forEach((figure, value) -> figures.computeIfAbsent(workload + "." + figure, k -> new ArrayList<>()).add(value));
    }

    private void print() {
        Function<List<Double>, Double> median = values -> values.stream().sorted().toList().get(values.size() / 2);
        System.out.printf("%-58s %10s   [min .. max] over %d rounds%n", "figure", "median", REPS);
        figures.forEach((name, values) -> System.out.printf("%-58s %10.1f   [%.1f .. %.1f]%n", name, median.apply(values),
                values.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN),
                values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN)));
    }

    private Pairs() {
    }
}
