package io.rlock.bench;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** The bench's JSON: maps, lists, strings and numbers (NaN and infinities as Python's json reads and writes them). */
final class JsonOut {
    private JsonOut() {
    }

    static String write(Object value) {
        return write(value, "") + "\n";
    }

    private static String write(Object value, String indent) {
        String inner = indent + " ";
        if (value instanceof Map<?, ?> map) {
            return map.entrySet().stream().map(e -> inner + quote(String.valueOf(e.getKey())) + ": " + write(e.getValue(), inner))
                    .collect(Collectors.joining(",\n", "{\n", "\n" + indent + "}"));
        }
        if (value instanceof List<?> list) {
            return list.stream().map(item -> write(item, inner)).collect(Collectors.joining(", ", "[", "]"));
        }
        if (value instanceof Double d && (d.isNaN() || d.isInfinite())) {
            return d.isNaN() ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
        }
        if (value instanceof Number) {
            return value.toString();
        }
        return quote(String.valueOf(value));
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                default -> out.append(c < 0x20 ? String.format("\\u%04x", (int) c) : String.valueOf(c));
            }
        }
        return out.append('"').toString();
    }
}
