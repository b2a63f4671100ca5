package io.rlock.testing;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

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

    /** The server exited because another process holds its port (or its cluster bus port). */
    public static final class PortTaken extends IOException {
        PortTaken(String message) {
            super(message);
        }
    }

    /** A new free port when another process took the last one first (suites run side by side). */
    private static final int START_ATTEMPTS = 5;

    interface StartOn {
        RedisServer on(int port) throws IOException, InterruptedException;
    }

    interface PortPicker {
        int pick() throws IOException;
    }

    private static RedisServer onAFreePort(StartOn start) throws IOException, InterruptedException {
        return picking(RedisServer::freePort, start);
    }

    /** {@code start} on a port from {@code pick}, and on another one when it was taken. */
    static RedisServer picking(PortPicker pick, StartOn start) throws IOException, InterruptedException {
        for (int attempt = 1; ; attempt++) {
            try {
                return start.on(pick.pick());
            } catch (PortTaken taken) {
                if (attempt == START_ATTEMPTS) {
                    throw taken;
                }
            }
        }
    }

    /** Starts a server on a free port; {@code extra} are more command-line options. */
    public static RedisServer start(String... extra) throws IOException, InterruptedException {
        return onAFreePort(port -> start(port, extra));
    }

    /** Starts a server on {@code port}; another process holding it fails with {@link PortTaken}. */
    public static RedisServer start(int port, String... extra) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("rlock-java-test-");
        List<String> command = new ArrayList<>(List.of(binary(), "--port", String.valueOf(port), "--save", "",
                "--appendonly", "no", "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString(),
                "--loadmodule", module().toString()));
        command.addAll(List.of(extra));
        int password = command.indexOf("--requirepass");
        return launch(port, dir, command, password < 0 ? null : command.get(password + 1));
    }

    /** The server binary: {@code REDIS_SERVER} (as the harness reads it), else redis-server on the PATH. */
    public static String binary() {
        String binary = System.getenv("REDIS_SERVER");
        return binary == null || binary.isEmpty() ? "redis-server" : binary;
    }

    /** A sentinel (no module) on a free port with these lines of configuration. */
    public static RedisServer sentinel(String... config) throws IOException, InterruptedException {
        return onAFreePort(port -> sentinel(port, config));
    }

    private static RedisServer sentinel(int port, String... config) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("rlock-java-sentinel-");
        Path conf = dir.resolve("sentinel.conf");
        Files.writeString(conf, String.join("\n", config) + "\n");
        return launch(port, dir, List.of(binary(), conf.toString(), "--sentinel", "--port", String.valueOf(port),
                "--dir", dir.toString(), "--logfile", dir.resolve("redis.log").toString()),
                Stream.of(config).filter(line -> line.startsWith("requirepass "))
                        .map(line -> line.substring("requirepass ".length()).trim()).findFirst().orElse(null));
    }

    private static RedisServer launch(int port, Path dir, List<String> command, String password)
            throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("stdout.log").toFile()).start();
        RUNNING.add(process);
        RedisServer server = new RedisServer(port, dir, process);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        // Ours is the server whose INFO names our child's pid: a suite running beside may have a
        // server of its own on the port, answering PING.
        while (!server.answersAs(process.pid(), password)) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                String log = server.log();
                server.close();
                if (log.contains("Address already in use")) {
                    throw new PortTaken("redis-server: port " + port + " (or its bus port " + (port + 10000)
                            + ") is held by another process: " + log);
                }
                throw new IOException("redis-server on port " + port + " did not start: " + log);
            }
            Thread.sleep(20);
        }
        return server;
    }

    private boolean answersAs(long pid, String password) {
        try (AdminConnection admin = AdminConnection.open(port, password)) {
            // RESP3's INFO is a verbatim string: Admin.text reads every form Lettuce gives.
            String info = Admin.text(admin.call("INFO", "server"));
            Matcher serving = PROCESS_ID.matcher(info == null ? "" : info);
            return serving.find() && Long.parseLong(serving.group(1)) == pid;
        } catch (IOException e) {
            return false; // not listening yet, LOADING, NOAUTH: not (yet) ours
        }
    }

    private static final Pattern PROCESS_ID = Pattern.compile("\r\nprocess_id:(\\d+)\r\n");

    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    /** A connection for the test's own checks (RESP3). */
    public AdminConnection admin() throws IOException {
        return AdminConnection.open(port, null);
    }

    public AdminConnection admin(String password) throws IOException {
        return AdminConnection.open(port, password);
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
