package io.rlock.internal;

import io.rlock.*;

import java.nio.charset.StandardCharsets;

/**
 * One message of a connection's {@code __rlock__} channel (docs/notify.md):
 * {@code <event> <type> <value> <key-length> <key> <owner>}. Four fields end at the first four
 * spaces, then {@code key-length} bytes of key, one space, and the owner is every remaining
 * byte (binary-safe: keys and owners may hold spaces).
 */
public final class Message {
    public final String event;
    public final String type;
    final String value;
    public final String key;
    public final String owner;

    Message(String event, String type, String value, String key, String owner) {
        this.event = event;
        this.type = type;
        this.value = value;
        this.key = key;
        this.owner = owner;
    }

    /** The message, or null when the payload is not one. */
    public static Message parse(byte[] payload) {
        String[] fields = new String[4];
        int at = 0;
        for (int i = 0; i < 4; i++) {
            int space = indexOf(payload, (byte) ' ', at);
            if (space < 0) {
                return null;
            }
            fields[i] = new String(payload, at, space - at, StandardCharsets.UTF_8);
            at = space + 1;
        }
        String length = fields[3];
        if (length.isEmpty() || length.length() > 10 || !digits(length)) {
            return null;
        }
        long keyLength = Long.parseLong(length);
        if (at + keyLength > payload.length) {
            return null;
        }
        int keyEnd = at + (int) keyLength;
        String key = new String(payload, at, (int) keyLength, StandardCharsets.UTF_8);
        String owner;
        if (keyEnd == payload.length) {
            owner = "";
        } else if (payload[keyEnd] == ' ') {
            owner = new String(payload, keyEnd + 1, payload.length - keyEnd - 1, StandardCharsets.UTF_8);
        } else {
            return null;
        }
        return new Message(fields[0], fields[1], fields[2], key, owner);
    }

    /** The token of a {@code granted} or {@code lost} message, or -1. */
    public long token() {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static boolean digits(String text) {
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) < '0' || text.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }

    private static int indexOf(byte[] bytes, byte b, int from) {
        for (int i = from; i < bytes.length; i++) {
            if (bytes[i] == b) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public String toString() {
        return event + " " + type + " " + value + " " + key + " " + owner;
    }
}
