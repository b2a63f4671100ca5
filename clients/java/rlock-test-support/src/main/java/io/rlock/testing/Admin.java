package io.rlock.testing;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import io.rlock.internal.transport.RespError;

/** Small helpers for a test's own checks on the server. */
public final class Admin {
    private Admin() {
    }

    public static Object call(AdminConnection conn, Object... args) {
        try {
            Object reply = conn.call(args);
            if (reply instanceof RespError) {
                throw new AssertionError(args[0] + " failed: " + reply);
            }
            return reply;
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    /** A map reply (RESP3 map or RESP2 flat list) by field name; null for nil. */
    public static Map<String, Object> map(Object reply) {
        if (reply == null) {
            return null;
        }
        Map<String, Object> map = new LinkedHashMap<>();
        if (reply instanceof Map) {
            ((Map<?, ?>) reply).forEach((k, v) -> map.put(text(k), v));
        } else {
            List<?> list = (List<?>) reply;
            for (int i = 0; i + 1 < list.size(); i += 2) {
                map.put(text(list.get(i)), list.get(i + 1));
            }
        }
        return map;
    }

    /** {@code RLOCK.INFO key} etc. as a map, null when free. */
    public static Map<String, Object> info(AdminConnection conn, String command, String key) {
        return map(call(conn, command, key));
    }

    public static long waiters(AdminConnection conn, String key) {
        Map<String, Object> info = info(conn, "RLOCK.INFO", key);
        return info == null ? 0 : (Long) info.get("waiters");
    }

    /** One field of {@code INFO <section>}, e.g. {@code blocked_clients}. */
    public static String infoField(AdminConnection conn, String section, String field) {
        String text = text(call(conn, "INFO", section));
        for (String line : text.split("\r\n")) {
            if (line.startsWith(field + ":")) {
                return line.substring(field.length() + 1);
            }
        }
        return null;
    }

    /** The lines of {@code CLIENT LIST} whose name is {@code name}. */
    public static List<String> clientsNamed(AdminConnection conn, String name) {
        String text = text(call(conn, "CLIENT", "LIST"));
        return text.lines().filter(line -> line.contains(" name=" + name + " ")).toList();
    }

    /** A reply as text: strings as they are, numbers in decimal, null for nil. */
    public static String text(Object reply) {
        if (reply == null) {
            return null;
        }
        return reply instanceof byte[] bytes ? new String(bytes, java.nio.charset.StandardCharsets.UTF_8) : reply.toString();
    }

    /** Waits up to {@code ms} for {@code condition}; fails the test otherwise. */
    public static void eventually(long ms, String what, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + ms * 1_000_000;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("not within " + ms + " ms: " + what);
            }
            Thread.sleep(2);
        }
    }
}
