package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import java.nio.charset.StandardCharsets;

/** Redis Cluster's key slots and its {@code MOVED}/{@code ASK} redirections. */
public final class Cluster {
    public static final int SLOTS = 16384;

    private Cluster() {
    }

    /** Where a redirection points: {@code MOVED} (the slot's new home) or {@code ASK} (this one command). */
    public static final class Redirect {
        public final boolean ask;
        public final int slot;
        public final String host;
        public final int port;

        Redirect(boolean ask, int slot, String host, int port) {
            this.ask = ask;
            this.slot = slot;
            this.host = host;
            this.port = port;
        }

        @Override
        public String toString() {
            return (ask ? "ASK " : "MOVED ") + slot + " " + host + ":" + port;
        }
    }

    /**
     * The redirection an error names, or null for any other error. {@code MOVED 3999 10.0.0.2:6381};
     * an empty host ({@code MOVED 3999 :6381}) means the host of the node that answered,
     * {@code currentHost}.
     */
    public static Redirect redirect(RespError error, String currentHost) {
        String code = error.code();
        boolean ask = code.equals("ASK");
        if (!ask && !code.equals("MOVED")) {
            return null;
        }
        String[] parts = error.message().split(" ");
        if (parts.length < 3) {
            return null;
        }
        String address = parts[2];
        int colon = address.lastIndexOf(':');
        if (colon < 0) {
            return null;
        }
        try {
            int slot = Integer.parseInt(parts[1]);
            int port = Integer.parseInt(address.substring(colon + 1));
            String host = address.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            if (host.isEmpty() || host.equals("?")) {
                host = currentHost;
            }
            if (slot < 0 || slot >= SLOTS) {
                return null;
            }
            return new Redirect(ask, slot, host, port);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    public static int slot(String key) {
        return slot(key.getBytes(StandardCharsets.UTF_8));
    }

    /** The key's slot: CRC16 of the key, or of its first non-empty {@code {hash tag}}, mod 16384. */
    public static int slot(byte[] key) {
        int start = 0;
        int end = key.length;
        for (int open = 0; open < key.length; open++) {
            if (key[open] == '{') {
                for (int close = open + 1; close < key.length; close++) {
                    if (key[close] == '}') {
                        if (close > open + 1) {
                            start = open + 1;
                            end = close;
                        }
                        break;
                    }
                }
                break;
            }
        }
        return crc16(key, start, end) & (SLOTS - 1);
    }

    /** CRC16-CCITT (XModem), as Redis Cluster computes it. */
    static int crc16(byte[] bytes, int from, int to) {
        int crc = 0;
        for (int i = from; i < to; i++) {
            crc ^= (bytes[i] & 0xff) << 8;
            for (int bit = 0; bit < 8; bit++) {
                crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
            }
        }
        return crc & 0xffff;
    }
}
