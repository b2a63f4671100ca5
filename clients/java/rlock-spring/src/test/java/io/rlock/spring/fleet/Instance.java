package io.rlock.spring.fleet;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * An application instance ({@link FleetApp}) in a JVM of its own, on the test's class path; its
 * {@code FLEET} lines are collected as they come, the rest of its output kept for a failure's
 * message.
 */
final class Instance implements AutoCloseable {
    final String name;
    private final Process process;
    private final List<String> events = new ArrayList<>();
    private final StringBuilder output = new StringBuilder();

    private Instance(String name, Process process) {
        this.name = name;
        this.process = process;
        Thread reader = new Thread(this::read, "instance-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    static Instance start(String name, String mode, int redisPort, String... properties) throws IOException {
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> command = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"), "-Xss512k", "-XX:TieredStopAtLevel=1",
                "-Dfleet.mode=" + mode, "-cp", classPath, FleetApp.class.getName(),
                "--spring.data.redis.port=" + redisPort, "--fleet.name=" + name));
        for (String property : properties) {
            command.add("--" + property);
        }
        return new Instance(name, new ProcessBuilder(command).redirectErrorStream(true).start());
    }

    private void read() {
        try (BufferedReader lines = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = lines.readLine()) != null;) {
                synchronized (this) {
                    if (line.startsWith("FLEET ")) {
                        events.add(line.substring("FLEET ".length()));
                    } else if (output.length() < 20_000) {
                        output.append(line).append('\n');
                    }
                    notifyAll();
                }
            }
        } catch (IOException e) {
            // the process is gone
        }
    }

    /** How many events of {@code kind} ({@code GRANTED}, {@code RUNNING}, ...) came so far. */
    synchronized long count(String kind) {
        return events.stream().filter(e -> e.startsWith(kind + " ")).count();
    }

    /** The time (ms, this machine's clock) of the {@code n}th (1-based) event of {@code kind}; waits for it. */
    synchronized long await(String kind, int n, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            List<String> matching = events.stream().filter(e -> e.startsWith(kind + " ")).toList();
            if (matching.size() >= n) {
                String event = matching.get(n - 1);
                return Long.parseLong(event.substring(event.lastIndexOf(' ') + 1));
            }
            long left = deadline - System.currentTimeMillis();
            if (left <= 0 || !process.isAlive() && matching.size() < n) {
                throw new AssertionError(name + ": no " + kind + " #" + n + " within " + timeoutMs + " ms (alive: "
                        + process.isAlive() + "); events " + events + "; output:\n" + output);
            }
            wait(Math.min(left, 100));
        }
    }

    synchronized String event(String kind) {
        return events.stream().filter(e -> e.startsWith(kind + " ")).findFirst().orElse(null);
    }

    /**
     * kill -9; returns once the process is gone, with the time the signal was sent: the process
     * ran none of its code after it, while it may be seen gone a few ms later (another
     * instance can be granted its lock before {@code waitFor} returns).
     */
    long kill9() throws InterruptedException {
        long sent = System.currentTimeMillis();
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new AssertionError(name + " did not die");
        }
        return sent;
    }

    /** Kills the instance if it still runs (an interrupt leaves it to the JVM's end). */
    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                kill9();
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
