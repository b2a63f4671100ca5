package rlock.spec;

import rlock.testing.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import rlock.resp.RespConnection;
import rlock.testing.RedisServer;
import rlock.testing.Topology;

/**
 * The shared behaviour specification (clients/spec): one dynamic test per scenario, named
 * {@code <file>.<name>}, run through the Java helper's public API (SpecActor's op table), the
 * expectations matched by SpecRun. Scenarios needing a capability the helper lacks are skipped
 * (aborted) by name with the capability; known drifts are listed in DRIFTS.
 */
class SpecTest {
    static final Path SPEC = Path.of(System.getProperty("rlock.spec",
            Path.of("").toAbsolutePath().resolve("../spec").normalize().toString()));
    /** Capabilities of the Java helper. */
    static final Set<String> SUPPORTED = Set.of("cancel", "confirmation");
    /** Known drifts (clients/spec/README.md): scenario -> what the helper does instead. */
    static final Map<String, String> DRIFTS = Map.of();

    static RedisServer server;
    static RespConnection admin;
    /** The harness's {@code replicated} topology, started for the first scenario naming it. */
    static Topology replicated;
    static RespConnection replicatedAdmin;

    @BeforeAll
    static void start() throws Exception {
        check();
        server = RedisServer.start();
        admin = server.admin();
        admin.call("HELLO", "3");
    }

    @AfterAll
    static void stop() {
        if (replicated != null) {
            replicatedAdmin.close();
            replicated.close();
        }
        if (admin != null) {
            admin.close();
        }
        if (server != null) {
            server.close();
        }
    }

    /** check.py validates every file (the schema and the README's rules): malformed ones fail loudly. */
    static void check() throws IOException, InterruptedException {
        Process check = new ProcessBuilder("python3", SPEC.resolve("check.py").toString())
                .redirectErrorStream(true).start();
        String output = new String(check.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (check.waitFor() != 0) {
            throw new AssertionError("clients/spec/check.py: " + output);
        }
    }

    @TestFactory
    Stream<DynamicTest> scenarios() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        String only = System.getenv("SPEC_ONLY");
        try (Stream<Path> files = Files.list(SPEC)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".json") && !f.endsWith("schema.json")).sorted().toList()) {
                String stem = file.getFileName().toString().replaceFirst("\\.json$", "");
                @SuppressWarnings("unchecked")
                Map<String, Object> parsed = (Map<String, Object>) Json.parse(Files.readString(file));
                for (Object entry : (List<?>) parsed.get("scenarios")) {
                    @SuppressWarnings("unchecked")
                    Map<String, Object> scenario = (Map<String, Object>) entry;
                    String name = stem + "." + scenario.get("name");
                    if (only == null || name.startsWith(only)) {
                        tests.add(DynamicTest.dynamicTest(name, () -> run(name, scenario)));
                    }
                }
            }
        }
        return tests.stream();
    }

    private static void run(String name, Map<String, Object> scenario) throws Exception {
        List<?> requires = (List<?>) scenario.getOrDefault("requires", List.of());
        List<String> missing = requires.stream().map(String::valueOf).filter(c -> !SUPPORTED.contains(c)).toList();
        Assumptions.assumeTrue(missing.isEmpty(),
                () -> "SKIPPED " + name + ": the Java helper does not support " + String.join(", ", missing));
        Throwable failure = null;
        SpecRun run;
        if ("replicated".equals(scenario.get("topology"))) {
            if (replicated == null) {
                replicated = Topology.start("replicated");
                replicatedAdmin = Topology.admin(replicated.primaryPort());
            }
            run = new SpecRun(scenario, replicatedAdmin, replicated.primaryPort());
            run.topology = replicated;
        } else {
            run = new SpecRun(scenario, admin, server.port);
        }
        try {
            run.start();
            run.steps();
        } catch (Throwable e) {
            failure = e;
        } finally {
            run.finish();
        }
        String drift = DRIFTS.get(name);
        if (drift != null) {
            if (failure == null) {
                throw new AssertionError(name + " passes: remove its known drift (" + drift + ")");
            }
            Assumptions.abort("XFAIL " + name + ": known drift: " + drift);
        }
        if (failure instanceof Exception e) {
            throw e;
        }
        if (failure instanceof Error e) {
            throw e;
        }
    }
}
