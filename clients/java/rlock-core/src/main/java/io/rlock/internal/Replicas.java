package io.rlock.internal;

import io.rlock.internal.transport.Connection;

import io.rlock.*;

import java.io.IOException;
import java.util.List;
import io.rlock.internal.transport.RespError;

/**
 * How many replicas are connected to one node, for {@link Confirm#auto()}: {@code ROLE} (else
 * {@code INFO replication}, for a user not allowed {@code ROLE}), read at most once a second,
 * and again after a new session or a write not confirmed. And, for {@link Confirm#aof()},
 * whether the node can answer {@code WAITAOF}, checked before the write so that a server that
 * cannot is told by a clear error and nothing is taken.
 */
public final class Replicas {
    private volatile int count;
    /** When it was read (System.nanoTime(); 0: to be read). */
    private volatile long readAt;
    /** Why {@code WAITAOF} cannot be used here (null: it can), and when that was read. */
    private volatile String aofRefusal;
    private volatile long aofReadAt;

    void invalidate() {
        readAt = 0;
        aofReadAt = 0;
    }

    /**
     * Throws {@link RLockException} when this node has no {@code WAITAOF} (Redis before 7.2:
     * {@code COMMAND INFO WAITAOF} is nil) or its {@code appendonly} is off (when the user may
     * read it); read at most once a second.
     */
    void requireAof(Connection conn) throws IOException {
        long at = aofReadAt;
        if (at == 0 || System.nanoTime() - at >= 1_000_000_000L) {
            String refusal = null;
            Object info = conn.call("COMMAND", "INFO", "WAITAOF");
            if (info instanceof List<?> list && (list.isEmpty() || list.get(0) == null)) {
                refusal = "this server has no WAITAOF (Redis 7.2 or newer, or Valkey, has it)";
            } else {
                Object config = conn.call("CONFIG", "GET", "appendonly");
                Object value = config instanceof java.util.Map<?, ?> map ? map.get("appendonly")
                        : config instanceof List<?> pair && pair.size() == 2 ? pair.get(1) : null;
                if (value != null && "no".equals(Replies.text(value))) {
                    refusal = "appendonly is off on this server (CONFIG SET appendonly yes)";
                }
            }
            aofRefusal = refusal;
            aofReadAt = stamp();
        }
        String refusal = aofRefusal;
        if (refusal != null) {
            throw new RLockException("ERR", "Confirm.aof() needs WAITAOF and appendonly: " + refusal
                    + "; nothing was written");
        }
    }

    int count(Connection conn) throws IOException {
        long at = readAt;
        if (at != 0 && System.nanoTime() - at < 1_000_000_000L) {
            return count;
        }
        Object role = conn.call("ROLE");
        int replicas = 0;
        if (role instanceof List<?> list && list.size() >= 3 && "master".equals(Replies.text(list.get(0)))
                && list.get(2) instanceof List<?> connected) {
            replicas = connected.size();
        } else if (role instanceof RespError) {
            String info = Replies.text(conn.call("INFO", "replication"));
            for (String line : info == null ? new String[0] : info.split("\\r?\\n")) {
                if (line.startsWith("connected_slaves:")) {
                    replicas = Integer.parseInt(line.substring(17).trim());
                }
            }
        }
        count = replicas;
        readAt = stamp();
        return replicas;
    }

    /**
     * Now, as a read time that is never the "to be read" 0 ({@code System.nanoTime()} may be
     * negative, where {@code Math.max(1, now)} would freeze the cache at 1).
     */
    private static long stamp() {
        long now = System.nanoTime();
        return now == 0 ? 1 : now;
    }
}
