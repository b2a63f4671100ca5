package rlock.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import rlock.resp.RespConnection;

/**
 * A redis-server process with the rlock module, for one test class: a free port, a temporary
 * directory, ready once it answers PING (within a deadline), killed and removed by close().
 */
public final class RedisServer implements AutoCloseable {
    /** Servers still running, killed if the test JVM exits without closing them. */
    private static final java.util.Set<Process> RUNNING = java.util.concurrent.ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> RUNNING.forEach(Process::destroyForcibly)));
    }

    public final int port;
    public final Path dir;
    private final Process process;

    private RedisServer(int port, Path dir, Process process) {
        this.port = port;
        this.dir = dir;
        this.process = process;
    }

    public static Path module() {
        String path = System.getProperty("rlock.module", System.getenv("RLOCK_MODULE"));
        if (path == null) {
            path = "../../target/release/librlock.so";
        }
        Path module = Paths.get(path).toAbsolutePath().normalize();
        if (!Files.isRegularFile(module)) {
            throw new IllegalStateException("the rlock module is not built: " + module);
        }
        return module;
    }

    public static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        }
    }

    /** Starts a server on a free port; {@code extra} are more command-line options. */
    public static RedisServer start(String... extra) throws IOException, InterruptedException {
        return start(freePort(), extra);
    }

    public static RedisServer start(int port, String... extra) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("rlock-java-test-");
        List<String> command = new ArrayList<>(List.of(binary(), "--port", String.valueOf(port), "--save", "",
                "--appendonly", "no", "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString(),
                "--loadmodule", module().toString()));
        command.addAll(List.of(extra));
        return launch(port, dir, command);
    }

    /** The server binary: {@code REDIS_SERVER} (as the harness reads it), else redis-server on the PATH. */
    public static String binary() {
        String binary = System.getenv("REDIS_SERVER");
        return binary == null || binary.isEmpty() ? "redis-server" : binary;
    }

    /** A sentinel (no module) on a free port with these lines of configuration. */
    public static RedisServer sentinel(String... config) throws IOException, InterruptedException {
        int port = freePort();
        Path dir = Files.createTempDirectory("rlock-java-sentinel-");
        Path conf = dir.resolve("sentinel.conf");
        Files.writeString(conf, String.join("\n", config) + "\n");
        return launch(port, dir, List.of(binary(), conf.toString(), "--sentinel", "--port", String.valueOf(port),
                "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString()));
    }

    private static RedisServer launch(int port, Path dir, List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("stdout.log").toFile()).start();
        RUNNING.add(process);
        RedisServer server = new RedisServer(port, dir, process);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!server.answersPing()) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                String log = server.log();
                server.close();
                throw new IOException("redis-server on port " + port + " did not start: " + log);
            }
            Thread.sleep(20);
        }
        return server;
    }

    private boolean answersPing() {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(1000);
            OutputStream out = socket.getOutputStream();
            out.write("*1\r\n$4\r\nPING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            int first = in.read();
            return first == '+' || first == '-';
        } catch (IOException e) {
            return false;
        }
    }

    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    /** A connection for the test's own checks (RESP3). */
    public RespConnection admin() throws IOException {
        return RespConnection.open(new RespConnection.Settings().address("127.0.0.1", port));
    }

    public RespConnection admin(String password) throws IOException {
        return RespConnection.open(new RespConnection.Settings().address("127.0.0.1", port).auth(null, password));
    }

    public String log() {
        try {
            return Files.readString(dir.resolve("redis.log")) + Files.readString(dir.resolve("stdout.log"));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    public Process process() {
        return process;
    }

    @Override
    public void close() {
        RUNNING.remove(process);
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind
        }
    }
}
