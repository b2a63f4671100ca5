package io.rlock.bench;

import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.locks.Lock;

/**
 * What uncontended pairs cost on the server, counted there: the commands each sends (from
 * {@code INFO commandstats}, after {@code CONFIG RESETSTAT}) and the connections it opens
 * ({@code total_connections_received}). Exact where a benchmark is noisy: the bench records it
 * beside its figures, the cost-count test asserts it. Left out: the admin connection's own
 * {@code CONFIG} and {@code INFO}, and the replicas' {@code REPLCONF} (their acknowledgements,
 * which a {@code WAIT} asks for and which they also send every second).
 */
public final class Wire {
    /** Commands by name ({@code rlock.acquire}, {@code evalsha}, {@code wait}, ...) and their calls. */
    public final Map<String, Long> commands;
    public final long connections;

    private Wire(Map<String, Long> commands, long connections) {
        this.commands = commands;
        this.connections = connections;
    }

    /** Resets the server's counters, runs {@code pairs} acquire+release pairs of {@code lock} on this thread, counts. */
    public static Wire count(AdminConnection admin, Lock lock, int pairs) {
        Admin.call(admin, "CONFIG", "RESETSTAT");
        long connectionsBefore = connections(admin);
        for (int i = 0; i < pairs; i++) {
            lock.lock();
            lock.unlock();
        }
        long connectionsAfter = connections(admin);
        return new Wire(commands(admin), connectionsAfter - connectionsBefore);
    }

    private static long connections(AdminConnection admin) {
        return Long.parseLong(Admin.infoField(admin, "stats", "total_connections_received"));
    }

    /** {@code cmdstat_<name>:calls=N,...} lines, without the admin's and the replicas' own commands. */
    static Map<String, Long> commands(AdminConnection admin) {
        Map<String, Long> calls = new TreeMap<>();
        for (String line : Admin.text(Admin.call(admin, "INFO", "commandstats")).split("\r?\n")) {
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            String name = line.substring("cmdstat_".length(), line.indexOf(':'));
            if (name.startsWith("config") || name.equals("info") || name.startsWith("replconf")) {
                continue;
            }
            String stats = line.substring(line.indexOf(':') + 1);
            for (String field : stats.split(",")) {
                if (field.startsWith("calls=")) {
                    calls.put(name, Long.parseLong(field.substring("calls=".length())));
                }
            }
        }
        return calls;
    }

    /** Calls per pair of each command, for the bench's record. */
    public Map<String, Double> perPair(int pairs) {
        Map<String, Double> per = new TreeMap<>();
        commands.forEach((name, calls) -> per.put(name, calls / (double) pairs));
        return per;
    }
}
