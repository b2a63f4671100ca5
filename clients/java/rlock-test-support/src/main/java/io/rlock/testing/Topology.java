package io.rlock.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A topology of the shared harness (clients/harness/topology.py, run as a child process):
 * {@code replicated}, {@code sentinel} or {@code cluster}, its servers loading the module. One
 * per test class; {@link #close()} (or the JVM's end: EOF on the harness's stdin) tears it down.
 */
public final class Topology implements AutoCloseable {
    private final Process process;
    private final BufferedReader out;
    private final OutputStream in;
    private volatile Map<String, Object> described;
    /** The servers' files and logs, removed by {@link #close()}. */
    private final Path dir;

    private Topology(Process process, Path dir) {
        this.process = process;
        this.dir = dir;
        this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.in = process.getOutputStream();
    }

    public static Topology start(String kind) throws IOException {
        Path harness = harness();
        Path dir = Files.createTempDirectory("rlock-java-" + kind);
        Process process = new ProcessBuilder("python3", harness.toString(), kind, "--module",
                RedisServer.module().toString(), "--dir", dir.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        Topology topology = new Topology(process, dir);
        String line = topology.out.readLine();
        if (line == null) {
            process.destroyForcibly();
            throw new IOException("the harness ended before the " + kind + " topology was ready");
        }
        Map<String, Object> described = map(Json.parse(line));
        if (Boolean.FALSE.equals(described.get("ok"))) { // it could not start: it says why (logs on stderr)
            process.destroyForcibly();
            throw new IOException("the harness could not start the " + kind + " topology: " + described.get("error"));
        }
        topology.described = described;
        return topology;
    }

    /**
     * clients/harness/topology.py: the {@code rlock.harness} property (the Maven build sets it),
     * else found above the working directory (a module's directory when run by Maven or an IDE).
     */
    static Path harness() throws IOException {
        String configured = System.getProperty("rlock.harness");
        if (configured != null) {
            return Path.of(configured, "topology.py");
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("clients/harness/topology.py");
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new IOException("clients/harness/topology.py not found above " + Path.of("").toAbsolutePath()
                + " (set -Drlock.harness=<clients/harness>)");
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object value) {
        return (Map<String, Object>) value;
    }

    /** One harness command ({@code {"op": op, key: value...}}): the topology it answers with. */
    public synchronized Map<String, Object> command(String op, Object... keyValues) throws IOException {
        StringBuilder json = new StringBuilder("{\"op\":\"").append(op).append('"');
        for (int i = 0; i + 1 < keyValues.length; i += 2) {
            Object value = keyValues[i + 1];
            json.append(",\"").append(keyValues[i]).append("\":")
                    .append(value instanceof Number ? value.toString() : "\"" + value + "\"");
        }
        in.write((json + "}\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        String line = out.readLine();
        if (line == null) {
            throw new IOException("the harness ended");
        }
        Map<String, Object> reply = map(Json.parse(line));
        if (!Boolean.TRUE.equals(reply.get("ok"))) {
            throw new IOException("harness " + op + ": " + reply.get("error"));
        }
        described = map(reply.get("topology"));
        return described;
    }

    public Map<String, Object> describe() {
        return described;
    }

    /** The primary's port (not for a cluster). */
    public int primaryPort() {
        return port(map(described.get("primary")));
    }

    public List<Integer> replicaPorts() {
        List<Integer> ports = new ArrayList<>();
        for (Object replica : (List<?>) described.get("replicas")) {
            ports.add(port(map(replica)));
        }
        return ports;
    }

    /** {@code redis-sentinel://127.0.0.1:p1,127.0.0.1:p2,.../<master name>}. */
    public String sentinelUri() {
        StringBuilder uri = new StringBuilder("redis-sentinel://");
        List<?> sentinels = (List<?>) described.get("sentinels");
        for (int i = 0; i < sentinels.size(); i++) {
            Map<String, Object> sentinel = map(sentinels.get(i));
            uri.append(i == 0 ? "" : ",").append(sentinel.get("host")).append(':').append(port(sentinel));
        }
        return uri.append('/').append(described.get("master_name")).toString();
    }

    /** Nodes of a cluster with this role ("primary"/"master" or "replica"). */
    public List<Map<String, Object>> nodes() {
        List<Map<String, Object>> nodes = new ArrayList<>();
        ((List<?>) described.get("nodes")).forEach(node -> nodes.add(map(node)));
        return nodes;
    }

    /** A cluster's seed for a client: {@code redis://} to one of its primaries. */
    public String seedUri() {
        Map<String, Object> primary = nodes().stream().filter(node -> "primary".equals(node.get("role"))).findFirst()
                .orElseThrow(() -> new IllegalStateException("the topology has no primary: " + described));
        return "redis://127.0.0.1:" + port(primary);
    }

    public static int port(Map<String, Object> node) {
        return ((Number) node.get("port")).intValue();
    }

    public void pause(int port) throws IOException {
        command("pause", "port", port);
    }

    public void resume(int port) throws IOException {
        command("resume", "port", port);
    }

    /** An admin connection (RESP3) to one server. */
    public static AdminConnection admin(int port) throws IOException {
        return AdminConnection.open(port, null);
    }

    @Override
    public void close() {
        try {
            command("stop");
        } catch (IOException | RuntimeException e) {
            // tearing down anyway
        }
        process.destroy();
        try {
            process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (java.util.stream.Stream<Path> files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind
        }
    }
}
