package rlock;

import java.io.IOException;
import java.util.List;
import rlock.resp.RespConnection;
import rlock.resp.RespError;

/**
 * How many replicas are connected to one node, for {@link Confirm#auto()}: {@code ROLE} (else
 * {@code INFO replication}, for a user not allowed {@code ROLE}), read at most once a second,
 * and again after a new session or a write not confirmed.
 */
final class Replicas {
    private volatile int count;
    /** When it was read (System.nanoTime(); 0: to be read). */
    private volatile long readAt;

    void invalidate() {
        readAt = 0;
    }

    int count(RespConnection conn) throws IOException {
        long at = readAt;
        if (at != 0 && System.nanoTime() - at < 1_000_000_000L) {
            return count;
        }
        Object role = conn.call("ROLE");
        int replicas = 0;
        if (role instanceof List<?> list && list.size() >= 3 && "master".equals(RespConnection.text(list.get(0)))
                && list.get(2) instanceof List<?> connected) {
            replicas = connected.size();
        } else if (role instanceof RespError) {
            String info = RespConnection.text(conn.call("INFO", "replication"));
            for (String line : info == null ? new String[0] : info.split("\\r?\\n")) {
                if (line.startsWith("connected_slaves:")) {
                    replicas = Integer.parseInt(line.substring(17).trim());
                }
            }
        }
        count = replicas;
        readAt = Math.max(1, System.nanoTime());
        return replicas;
    }
}
