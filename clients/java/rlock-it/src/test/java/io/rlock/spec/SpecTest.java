package io.rlock.spec;

import io.rlock.*;
import io.rlock.internal.*;

import io.rlock.testing.Json;
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
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;
import io.rlock.testing.Topology;

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
    static AdminConnection admin;
    /** The harness's {@code replicated} topology, started for the first scenario naming it. */
    static Topology replicated;
    static AdminConnection replicatedAdmin;

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
        for (Path file : jsonFiles(SPEC)) {
            forEachScenario(file, (name, scenario) -> {
                if (only == null || name.startsWith(only)) {
                    tests.add(DynamicTest.dynamicTest(name, () -> run(name, scenario)));
                }
            });
        }
        return tests.stream();
    }

    /**
     * clients/spec/valid-fail/: scenarios whose expectations are deliberately wrong. Each test
     * passes only when its scenario fails an expectation: a runner that stopped asserting fails
     * here.
     */
    @TestFactory
    Stream<DynamicTest> validFailScenariosFail() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (Path file : jsonFiles(SPEC.resolve("valid-fail"))) {
            forEachScenario(file, (name, scenario) -> tests.add(DynamicTest.dynamicTest("valid-fail/" + name,
                    () -> mustFail(name, scenario))));
        }
        return tests.stream();
    }

    /** clients/spec/invalid/: every file there (newer, unreadable or missing schemaVersion) is refused, loudly. */
    @TestFactory
    Stream<DynamicTest> newerSchemaFilesAreRefused() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (Path file : jsonFiles(SPEC.resolve("invalid"))) {
            tests.add(DynamicTest.dynamicTest("invalid/" + file.getFileName(), () -> {
                AssertionError refused = Assertions.assertThrows(AssertionError.class, () -> load(file));
                Assertions.assertTrue(refused.getMessage().contains("schemaVersion"), refused.getMessage());
            }));
        }
        return tests.stream();
    }

    /** The contract checked on files of our own, whatever clients/spec/invalid and valid-fail hold today. */
    @Test
    void aFileWithANewerSchemaVersionIsRefusedAndTheCurrentOneRead(@TempDir Path dir) throws IOException {
        Path newer = dir.resolve("newer.json");
        Files.writeString(newer, "{\"schemaVersion\": \"2.0\", \"scenarios\": []}");
        AssertionError refused = Assertions.assertThrows(AssertionError.class, () -> load(newer));
        Assertions.assertTrue(refused.getMessage().contains("schemaVersion 2.0 is newer than 1.0"), refused.getMessage());
        Path minor = dir.resolve("minor.json");
        Files.writeString(minor, "{\"schemaVersion\": \"1.1\", \"scenarios\": []}");
        Assertions.assertThrows(AssertionError.class, () -> load(minor));
        Path garbled = dir.resolve("garbled.json");
        Files.writeString(garbled, "{\"schemaVersion\": 1, \"scenarios\": []}");
        Assertions.assertThrows(AssertionError.class, () -> load(garbled));
        Path current = dir.resolve("current.json");
        Files.writeString(current, "{\"schemaVersion\": \"1.0\", \"scenarios\": []}");
        Assertions.assertEquals(List.of(), load(current).get("scenarios"));
    }

    /** A scenario with a wrong expectation fails the run, so it passes as valid-fail; a right one does not. */
    @Test
    void aWrongExpectationFailsAndOnlyThenDoesAValidFailScenarioPass(@TempDir Path dir) throws Exception {
        String scenario = "{\"schemaVersion\": \"1.0\", \"scenarios\": [{\"name\": \"%s\", \"actors\": [\"A\"],"
                + " \"steps\": [{\"op\": \"acquire\", \"actor\": \"A\", \"type\": \"lock\", \"key\": \"%s\","
                + " \"expect\": {\"%s\": 0}}]}]}";
        Path wrong = dir.resolve("wrong.json");
        Files.writeString(wrong, String.format(scenario, "token_below_zero", "contract-wrong", "$lt"));
        Path right = dir.resolve("right.json");
        Files.writeString(right, String.format(scenario, "token_above_zero", "contract-right", "$gt"));
        forEachScenario(wrong, (name, parsed) -> Assertions.assertDoesNotThrow(() -> mustFail(name, parsed)));
        forEachScenario(right, (name, parsed) -> {
            AssertionError passed = Assertions.assertThrows(AssertionError.class, () -> mustFail(name, parsed));
            Assertions.assertTrue(passed.getMessage().contains("but it passed"), passed.getMessage());
        });
    }

    /** The scenario file versions this runner understands. */
    static final String SCHEMA_VERSION = "1.0";

    /**
     * A scenario file, parsed: refused (AssertionError) when its {@code schemaVersion} is newer
     * than {@link #SCHEMA_VERSION} or not a version at all, so that a file this runner cannot
     * read fails instead of being half-run. A file without one predates the field: 1.0.
     */
    static Map<String, Object> load(Path file) throws IOException {
        @SuppressWarnings("unchecked")
        Map<String, Object> parsed = (Map<String, Object>) Json.parse(Files.readString(file));
        Object version = parsed.get("schemaVersion");
        if (version == null) {
            throw new AssertionError(file + ": no schemaVersion: refused (CONTRACT.md R1.2)");
        }
        if (!(version instanceof String text && text.matches("\\d+\\.\\d+"))) {
            throw new AssertionError(file + ": schemaVersion " + version + " is not a \"<major>.<minor>\" string");
        }
        if (newer((String) version, SCHEMA_VERSION)) {
            throw new AssertionError(file + ": schemaVersion " + version + " is newer than " + SCHEMA_VERSION
                    + ", the newest this runner supports: refused");
        }
        return parsed;
    }

    /** Whether version {@code a} ("major.minor") is newer than {@code b}. */
    static boolean newer(String a, String b) {
        String[] x = a.split("\\.");
        String[] y = b.split("\\.");
        int major = Integer.compare(Integer.parseInt(x[0]), Integer.parseInt(y[0]));
        return major != 0 ? major > 0 : Integer.parseInt(x[1]) > Integer.parseInt(y[1]);
    }

    private static List<Path> jsonFiles(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(f -> f.toString().endsWith(".json") && !f.endsWith("schema.json")).sorted().toList();
        }
    }

    interface ScenarioSink {
        void accept(String name, Map<String, Object> scenario);
    }

    /** Each scenario of {@code file} (loaded: a newer schema is refused), named {@code <file stem>.<name>}. */
    static void forEachScenario(Path file, ScenarioSink sink) throws IOException {
        String stem = file.getFileName().toString().replaceFirst("\\.json$", "");
        for (Object entry : (List<?>) load(file).get("scenarios")) {
            @SuppressWarnings("unchecked")
            Map<String, Object> scenario = (Map<String, Object>) entry;
            sink.accept(stem + "." + scenario.get("name"), scenario);
        }
    }

    /** Runs a valid-fail scenario: passes only when an expectation of it fails. */
    static void mustFail(String name, Map<String, Object> scenario) throws Exception {
        try {
            run(name, scenario);
        } catch (AssertionError expected) {
            return;
        }
        throw new AssertionError(name + " is a valid-fail scenario (its expectations are wrong on purpose) but it passed:"
                + " the runner did not check them");
    }

    static void run(String name, Map<String, Object> scenario) throws Exception {
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
