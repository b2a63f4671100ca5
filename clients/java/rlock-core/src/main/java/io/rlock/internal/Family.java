package io.rlock.internal;

import io.rlock.*;

import java.util.ArrayList;
import java.util.List;

/** The kinds of waits and holdings, each with its commands and its message type. */
public enum Family {
    LOCK("lock", "RLOCK", null),
    READ("read", "RWLOCK", "READ"),
    WRITE("write", "RWLOCK", "WRITE"),
    PERMITS("permits", "RSEM", null),
    /** Redisson's counting semaphore: permits that belong to nobody; a wait's "owner" is its request id. */
    COUNTING("counting", "RCSEM", null),
    LATCH("latch", "RLATCH", null);

    /** The {@code type} field of its notify messages. */
    public final String type;
    final String prefix;
    final String mode;
    /** {@code <PREFIX>.ACQUIRE}, {@code .RELEASE}, {@code .RENEW}: made once, not per call. */
    private final String acquire;
    private final String release;
    private final String renew;

    Family(String type, String prefix, String mode) {
        this.type = type;
        this.prefix = prefix;
        this.mode = mode;
        this.acquire = prefix + ".ACQUIRE";
        this.release = prefix + ".RELEASE";
        this.renew = prefix + ".RENEW";
    }

    /** {@link #values()}, which copies its array at every call. */
    private static final Family[] ALL = values();

    static Family ofType(String type) {
        for (Family family : ALL) {
            if (family.type.equals(type)) {
                return family;
            }
        }
        return null;
    }

    /** No {@code WAIT}: one attempt. */
    static final long NO_WAIT = -1;
    /** {@code NOTIFY} naming no connection: the calling one receives. */
    static final long NOTIFY_SELF = -1;

    /**
     * {@code <PREFIX>.ACQUIRE key owner [READ|WRITE] [PERMITS n] PX lease [WATCHDOG] [WAIT ms NOTIFY [id]] ID id
     * [LOCKDELAY ms]} ({@code LOCKDELAY} when {@code lockDelayMs} > 0: plain locks only).
     */
    Object[] acquire(String key, String owner, int permits, long leaseMs, boolean watchdog, long waitMs,
            long notifyId, String requestId, long lockDelayMs) {
        List<Object> args = head(acquire, key, owner, permits, 16);
        addOptions(args, leaseMs, watchdog, waitMs, notifyId, requestId, lockDelayMs);
        return args.toArray();
    }

    /**
     * {@code RSEM.ACQUIRE key base PERMITS n EACH ...} (permits only): n holdings of one permit
     * each, owners {@code <base>:1} to {@code <base>:<n>}, granted all at once or not at all.
     */
    Object[] acquireEach(String key, String base, int permits, long leaseMs, boolean watchdog, long waitMs,
            long notifyId, String requestId) {
        List<Object> args = head(acquire, key, base, permits, 18);
        args.add("EACH");
        addOptions(args, leaseMs, watchdog, waitMs, notifyId, requestId, 0);
        return args.toArray();
    }

    /** The owners {@link #acquireEach} grants: {@code <base>:1} to {@code <base>:<n>}. */
    static List<String> eachOwners(String base, int permits) {
        List<String> owners = new ArrayList<>(permits);
        for (int i = 1; i <= permits; i++) {
            owners.add(base + ":" + i);
        }
        return owners;
    }

    /**
     * {@code RSEM.RELEASEMANY key ID id ALL|ANY owner...}: every permit of each listed owner;
     * {@code ALL}: all of them held, or an error and nothing changes; {@code ANY}: those held. A
     * re-sent call (same id) releases nothing and answers as the first.
     */
    static Object[] releaseMany(String key, boolean all, List<String> owners, String requestId) {
        List<Object> args = new ArrayList<>(owners.size() + 5);
        args.add("RSEM.RELEASEMANY");
        args.add(key);
        args.add("ID");
        args.add(requestId);
        args.add(all ? "ALL" : "ANY");
        args.addAll(owners);
        return args.toArray();
    }

    /**
     * The options of an acquire after its owner (and mode, permits): {@code PX lease [WATCHDOG]
     * [WAIT ms NOTIFY [id]] ID id [LOCKDELAY ms]} ({@code WAIT} unless {@code waitMs} is
     * {@link #NO_WAIT}, {@code LOCKDELAY} when {@code lockDelayMs} > 0).
     */
    static void addOptions(List<Object> args, long leaseMs, boolean watchdog, long waitMs, long notifyId,
            String requestId, long lockDelayMs) {
        args.add("PX");
        args.add(leaseMs);
        if (watchdog) {
            args.add("WATCHDOG");
        }
        if (waitMs != NO_WAIT) {
            args.add("WAIT");
            args.add(waitMs);
            args.add("NOTIFY");
            if (notifyId != NOTIFY_SELF) {
                args.add(notifyId);
            }
        }
        args.add("ID");
        args.add(requestId);
        if (lockDelayMs > 0) {
            args.add("LOCKDELAY");
            args.add(lockDelayMs);
        }
    }

    /**
     * {@code RLOCK.ACQUIREALL numkeys key... owner PX lease [WATCHDOG] [WAIT ms NOTIFY [id]] ID id
     * [LOCKDELAY ms]}: every key or none.
     */
    static Object[] acquireAll(List<String> keys, String owner, long leaseMs, boolean watchdog, long waitMs,
            long notifyId, String requestId, long lockDelayMs) {
        List<Object> args = all("ACQUIREALL", keys, owner);
        addOptions(args, leaseMs, watchdog, waitMs, notifyId, requestId, lockDelayMs);
        return args.toArray();
    }

    /** {@code RLOCK.RELEASEALL numkeys key... owner ID id}: one hold of every key. */
    static Object[] releaseAll(List<String> keys, String owner, String requestId) {
        List<Object> args = all("RELEASEALL", keys, owner);
        args.add("ID");
        args.add(requestId);
        return args.toArray();
    }

    private static List<Object> all(String verb, List<String> keys, String owner) {
        List<Object> args = new ArrayList<>(keys.size() + 16);
        args.add("RLOCK." + verb);
        args.add((long) keys.size());
        args.addAll(keys);
        args.add(owner);
        return args;
    }

    Object[] release(String key, String owner, int permits, String requestId) {
        if (this == COUNTING) {
            return new Object[] {"RCSEM.RELEASE", key, "PERMITS", (long) permits, "ID", requestId};
        }
        List<Object> args = head(release, key, owner, permits, 8);
        args.add("ID");
        args.add(requestId);
        return args.toArray();
    }

    /** {@code <PREFIX>.<verb> key owner [READ|WRITE] [PERMITS n]}: what acquire and release both start with. */
    private List<Object> head(String command, String key, String owner, int permits, int capacity) {
        List<Object> args = new ArrayList<>(capacity);
        args.add(command);
        args.add(key);
        args.add(owner);
        if (mode != null) {
            args.add(mode);
        }
        if (this == PERMITS) {
            args.add("PERMITS");
            args.add((long) permits);
        }
        return args;
    }

    Object[] renew(String key, String owner, long leaseMs, boolean watchdog) {
        return watchdog
                ? new Object[] {renew, key, owner, "PX", leaseMs, "WATCHDOG"}
                : new Object[] {renew, key, owner, "PX", leaseMs};
    }

    /** Latches only: {@code RLATCH.AWAIT key [WAIT ms NOTIFY [id]]}. */
    Object[] await(String key, long waitMs, long notifyId) {
        if (waitMs == NO_WAIT) {
            return new Object[] {"RLATCH.AWAIT", key};
        }
        return notifyId == NOTIFY_SELF
                ? new Object[] {"RLATCH.AWAIT", key, "WAIT", waitMs, "NOTIFY"}
                : new Object[] {"RLATCH.AWAIT", key, "WAIT", waitMs, "NOTIFY", notifyId};
    }
}
