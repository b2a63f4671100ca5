package io.rlock.spec;

import io.rlock.*;
import io.rlock.internal.*;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import io.rlock.testing.Admin;
import io.rlock.testing.AdminConnection;
import io.rlock.internal.transport.RespError;

/** One scenario being run: its actors, saved values, background steps; steps and matching. */
final class SpecRun {
    private static final AtomicInteger USERS = new AtomicInteger();
    private static final long AWAIT_DEFAULT_MS = 5000;
    private static final long JOIN_CAP_MS = 30_000;

    private final Map<String, Object> scenario;
    private final AdminConnection admin;
    private final int port;
    private final Map<String, SpecActor> actors = new LinkedHashMap<>();
    private final Map<String, Object> saved = new HashMap<>();
    private final Map<String, Background> background = new HashMap<>();

    private record Background(CompletableFuture<Object> result, long started, String actor) {
    }

    /** A step's outcome: a result, or an error kind. */
    private record Outcome(Object result, String error) {
    }

    /** The harness's topology of a scenario that names one (pause_replicas, resume_replicas), else null. */
    io.rlock.testing.Topology topology;
    private final List<Integer> paused = new ArrayList<>();

    SpecRun(Map<String, Object> scenario, AdminConnection admin, int port) {
        this.scenario = scenario;
        this.admin = admin;
        this.port = port;
    }

    void start() throws IOException {
        command("FLUSHALL");
        @SuppressWarnings("unchecked")
        Map<String, Object> config = (Map<String, Object>) scenario.getOrDefault("server_config", Map.of());
        for (Map.Entry<String, Object> entry : config.entrySet()) {
            command("CONFIG", "SET", entry.getKey(), String.valueOf(entry.getValue()));
        }
        for (Object name : (List<?>) scenario.getOrDefault("actors", List.of())) {
            String user = "spec-" + USERS.incrementAndGet() + "-" + name;
            command("ACL", "SETUSER", user, "reset", "on", ">spec", "~*", "&*", "+@all");
            actors.put((String) name, new SpecActor(user, "redis://" + user + ":spec@127.0.0.1:" + port));
        }
    }

    void steps() throws Exception {
        List<?> steps = (List<?>) scenario.get("steps");
        for (int i = 0; i < steps.size(); i++) {
            @SuppressWarnings("unchecked")
            Map<String, Object> step = (Map<String, Object>) steps.get(i);
            try {
                step(step);
            } catch (AssertionError | Exception e) {
                throw new AssertionError("step " + i + " (" + step.get("op") + "): " + e.getMessage(), e);
            }
        }
    }

    void finish() {
        for (int replica : paused) {
            try {
                topology.resume(replica);
            } catch (IOException e) {
                // the harness is gone
            }
        }
        for (Background running : background.values()) {
            actors.get(running.actor).interrupt();
        }
        for (SpecActor actor : actors.values()) {
            try {
                command("ACL", "SETUSER", actor.user, "off");
                command("CLIENT", "KILL", "USER", actor.user);
                actor.close();
                command("ACL", "DELUSER", actor.user);
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        }
    }

    private void step(Map<String, Object> step) throws Exception {
        long started = System.nanoTime();
        String op = (String) step.get("op");
        if (step.containsKey("background")) {
            background.put((String) step.get("background"),
                    new Background(actors.get((String) step.get("actor")).run(step), started, (String) step.get("actor")));
            return;
        }
        long from = started;
        Outcome outcome;
        if (op.equals("join") || op.equals("cancel")) {
            Background running = background.remove((String) step.get("name"));
            from = running.started;
            if (op.equals("cancel")) {
                actors.get(running.actor).interrupt();
                outcome(running.result, true);
                outcome = new Outcome(null, null);
            } else {
                outcome = outcome(running.result, false);
            }
        } else if (step.containsKey("actor") && !op.equals("kill_connection") && !op.equals("crash") && !op.equals("await_lost")) {
            outcome = outcome(actors.get((String) step.get("actor")).run(step), false);
        } else {
            outcome = new Outcome(perform(step), null);
        }
        check(step, outcome, started, from);
    }

    /** The outcome of an actor's call; an error that is no kind fails the step. */
    private Outcome outcome(CompletableFuture<Object> call, boolean cancelled) throws Exception {
        try {
            Object result = call.get(JOIN_CAP_MS, TimeUnit.MILLISECONDS);
            return result == SpecActor.NOT_ACQUIRED ? new Outcome(null, "NotAcquired") : new Outcome(result, null);
        } catch (TimeoutException e) {
            throw new AssertionError("not done after " + JOIN_CAP_MS + " ms");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cancelled && cause instanceof InterruptedException) {
                return new Outcome(null, null);
            }
            String kind = SpecActor.kindOf(cause);
            if (kind == null) {
                throw new AssertionError(cause.getClass().getSimpleName() + ": " + cause.getMessage(), cause);
            }
            return new Outcome(null, kind);
        }
    }

    private void check(Map<String, Object> step, Outcome outcome, long started, long from) {
        long now = System.nanoTime();
        Object wanted = step.get("error");
        if (wanted == null ? outcome.error != null : !wanted.equals(outcome.error)) {
            throw new AssertionError("expected " + (wanted == null ? "success" : wanted) + ", got "
                    + (outcome.error == null ? "success (" + outcome.result + ")" : outcome.error));
        }
        if (step.containsKey("expect") && !matches(step.get("expect"), outcome.result)) {
            throw new AssertionError("expected " + step.get("expect") + ", got " + outcome.result);
        }
        long tookMs = (now - started) / 1_000_000;
        if (step.containsKey("within_ms") && tookMs > (Long) step.get("within_ms")) {
            throw new AssertionError("took " + tookMs + " ms, more than " + step.get("within_ms") + " ms");
        }
        long waitedMs = (now - from) / 1_000_000;
        if (step.containsKey("after_ms") && waitedMs < (Long) step.get("after_ms")) {
            throw new AssertionError("ended after " + waitedMs + " ms, sooner than " + step.get("after_ms") + " ms");
        }
        if (step.containsKey("save")) {
            saved.put((String) step.get("save"), outcome.result);
        }
    }

    private Object value(Object expected) {
        if (expected instanceof String s && s.startsWith("$")) {
            if (!saved.containsKey(s.substring(1))) {
                throw new AssertionError(s + " was never saved");
            }
            return saved.get(s.substring(1));
        }
        return expected;
    }

    boolean matches(Object expected, Object actual) {
        if (expected instanceof Map<?, ?> map) {
            if (!map.isEmpty() && map.keySet().stream().allMatch(k -> ((String) k).startsWith("$"))) {
                return map.entrySet().stream().allMatch(e -> operator((String) e.getKey(), e.getValue(), actual));
            }
            return actual instanceof Map<?, ?> got && map.entrySet().stream()
                    .allMatch(e -> got.containsKey(e.getKey()) && matches(e.getValue(), got.get(e.getKey())));
        }
        if (expected instanceof List<?> list) {
            if (!(actual instanceof List<?> got) || got.size() != list.size()) {
                return false;
            }
            for (int i = 0; i < list.size(); i++) {
                if (!matches(list.get(i), got.get(i))) {
                    return false;
                }
            }
            return true;
        }
        Object want = value(expected);
        return want == null ? actual == null : want.equals(actual);
    }

    private boolean operator(String op, Object operand, Object actual) {
        switch (op) {
            case "$type":
                return operand.equals(actual == null ? "null" : actual instanceof Long ? "integer"
                        : actual instanceof String ? "string" : actual instanceof List ? "array"
                        : actual instanceof Map ? "object" : actual instanceof Boolean ? "boolean" : "other");
            case "$len":
                return actual instanceof List<?> list && list.size() == (Long) operand;
            default:
                if (!(actual instanceof Long got)) {
                    return false;
                }
                long v = (Long) value(operand);
                return switch (op) {
                    case "$gt" -> got > v;
                    case "$gte" -> got >= v;
                    case "$lt" -> got < v;
                    case "$lte" -> got <= v;
                    case "$ne" -> got != v;
                    default -> throw new AssertionError("unknown operator " + op);
                };
        }
    }

    // -- steps of the runner itself -------------------------------------------------------------

    private Object perform(Map<String, Object> step) throws Exception {
        String op = (String) step.get("op");
        switch (op) {
            case "admin":
                return command(((List<?>) step.get("command")).stream().map(String::valueOf).toArray());
            case "sleep":
                Thread.sleep((Long) step.get("ms"));
                return null;
            case "await_waiters":
                until(step, () -> waiters(step) == (Long) step.get("count"), step.get("count") + " waiters");
                return null;
            case "await_lost": {
                SpecActor actor = actors.get((String) step.get("actor"));
                Collection<String> keys = lostKeys(step);
                until(step, () -> keys.stream().anyMatch(actor.lost::contains), "the holding reported lost");
                return null;
            }
            case "kill_connection":
                command("CLIENT", "KILL", "USER", actors.get((String) step.get("actor")).user);
                return null;
            case "crash": {
                String user = actors.get((String) step.get("actor")).user;
                command("ACL", "SETUSER", user, "off");
                command("CLIENT", "KILL", "USER", user);
                return null;
            }
            case "pause_replicas":
                paused.addAll(topology.replicaPorts()); // the harness lists only running replicas
                for (int replica : paused) {
                    topology.pause(replica);
                }
                return null;
            case "resume_replicas":
                for (int replica : paused) {
                    topology.resume(replica);
                }
                paused.clear();
                return null;
            default:
                throw new AssertionError("unknown op " + op);
        }
    }

    private static Collection<String> lostKeys(Map<String, Object> step) {
        String type = (String) step.get("type");
        if (type.equals("multilock")) {
            List<String> keys = new ArrayList<>();
            ((List<?>) step.get("keys")).forEach(k -> keys.add("lock:" + k));
            return keys;
        }
        return List.of((type.equals("election") ? "lock" : type) + ":" + step.get("key"));
    }

    private interface Check {
        boolean holds() throws Exception;
    }

    private static void until(Map<String, Object> step, Check check, String what) throws Exception {
        long ms = (Long) step.getOrDefault("within_ms", AWAIT_DEFAULT_MS);
        long end = System.nanoTime() + ms * 1_000_000;
        while (!check.holds()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("no " + what + " within " + ms + " ms");
            }
            Thread.sleep(2);
        }
    }

    private long waiters(Map<String, Object> step) throws IOException {
        String type = (String) step.get("type");
        if (type.equals("server")) {
            return (Long) ((Map<?, ?>) command("INFO", "rlock")).get("rlock_waiters");
        }
        String command = switch (type) {
            case "lock" -> "RLOCK.INFO";
            case "rwlock" -> "RWLOCK.INFO";
            case "semaphore" -> "RSEM.INFO";
            default -> throw new AssertionError("unknown await_waiters type " + type);
        };
        Object reply = command(command, step.get("key"));
        if (!(reply instanceof Map<?, ?> info)) {
            return 0;
        }
        return switch (type) {
            case "lock" -> (Long) info.get("waiters");
            case "rwlock" -> (Long) info.get("waiting_readers") + (Long) info.get("waiting_writers");
            default -> ((List<?>) info.get("waiters")).size();
        };
    }

    /** The admin's reply, as JSON values (INFO parsed into an object of its lines). */
    private Object command(Object... args) throws IOException {
        Object reply = admin.call(args);
        if (reply instanceof RespError e) {
            throw new AssertionError(args[0] + ": " + e);
        }
        Object plain = plain(reply);
        return String.valueOf(args[0]).equalsIgnoreCase("INFO") ? info((String) plain) : plain;
    }

    /** A RESP value as a JSON value: text as String, maps with String keys, sets as lists. */
    static Object plain(Object reply) {
        if (reply instanceof byte[] bytes) {
            return Admin.text(bytes);
        }
        if (reply instanceof Map<?, ?> map) {
            Map<String, Object> out = new LinkedHashMap<>();
            map.forEach((k, v) -> out.put(Admin.text(k), plain(v)));
            return out;
        }
        if (reply instanceof Collection<?> list) {
            return list.stream().map(SpecRun::plain).toList();
        }
        return reply;
    }

    private static Map<String, Object> info(String text) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String line : text.split("\r?\n")) {
            int at = line.indexOf(':');
            if (line.startsWith("#") || at < 0) {
                continue;
            }
            String value = line.substring(at + 1);
            out.put(line.substring(0, at), value.matches("-?\\d+") ? (Object) Long.parseLong(value) : value);
        }
        return out;
    }
}
