package io.rlock;

import io.rlock.internal.*;

import java.time.Duration;

/**
 * Confirmation by the replicas (docs/availability.md): every write that takes or gives back a
 * lock, a read or write hold, permits or a count is pipelined with {@code WAIT n timeout} (or
 * {@code WAITAOF 1 n timeout}) on the same connection, so that a failover right after it
 * cannot hand the lock to a second holder unnoticed. Immutable; set it with
 * {@link RLockOptions#confirm(Confirm)} or per handle with {@link RLockClient#withConfirm(Confirm)}.
 *
 * <ul>
 * <li>{@link #auto()} (the default): the replicas connected to the primary at that moment
 * ({@code ROLE}, read at most once a second and again after a failure); none: nothing is sent.</li>
 * <li>{@link #replicas(int)}: that many replicas, whatever {@code ROLE} says.</li>
 * <li>{@link #aof()}: {@code WAITAOF 1 n}, fsynced by the primary and n replicas (Redis 7.2+,
 * with {@code appendonly yes}).</li>
 * <li>{@link #off()}: no confirmation; replication stays asynchronous.</li>
 * </ul>
 * Not confirmed within {@link #timeout(Duration)} (1 s, Redisson's {@code slavesSyncTimeout}):
 * an acquisition is undone and the call throws {@link NotConfirmedException}; a release or
 * count-down stands on the primary and throws it too. With {@link #warnOnly()} a warning is
 * logged instead and the call goes on as if confirmed.
 */
public final class Confirm {
    /** Replica count meaning "those connected now". */
    public static final int AUTO = -1;
    private static final System.Logger LOG = System.getLogger("rlock");

    public final int replicas;
    public final boolean aof;
    public final boolean off;
    final long timeoutMs;
    final boolean warn;

    private Confirm(int replicas, boolean aof, boolean off, long timeoutMs, boolean warn) {
        this.replicas = replicas;
        this.aof = aof;
        this.off = off;
        this.timeoutMs = timeoutMs;
        this.warn = warn;
    }

    /** The replicas connected to the primary at the time of the write (the default). */
    public static Confirm auto() {
        return new Confirm(AUTO, false, false, 1000, false);
    }

    /** Exactly {@code replicas} replicas (0: none, i.e. off). */
    public static Confirm replicas(int replicas) {
        if (replicas < 0) {
            throw new IllegalArgumentException("a replica count of 0 or more");
        }
        return new Confirm(replicas, false, replicas == 0, 1000, false);
    }

    /** {@code WAITAOF 1 n}: the primary's AOF and the connected replicas' (Redis 7.2+). */
    public static Confirm aof() {
        return new Confirm(AUTO, true, false, 1000, false);
    }

    /** No confirmation. */
    public static Confirm off() {
        return new Confirm(0, false, true, 1000, false);
    }

    /** {@code WAITAOF 1 n} with this setting's replica count. */
    public Confirm withAof(boolean aof) {
        return new Confirm(replicas, aof, off && !aof, timeoutMs, warn);
    }

    /** How long the replicas have (default 1 s). */
    public Confirm timeout(Duration timeout) {
        if (timeout.toMillis() < 1) {
            throw new IllegalArgumentException("a confirmation timeout of at least 1 ms");
        }
        return new Confirm(replicas, aof, off, timeout.toMillis(), warn);
    }

    /** Not confirmed in time: log a warning and go on (an acquisition is then reported held). */
    public Confirm warnOnly() {
        return new Confirm(replicas, aof, off, timeoutMs, true);
    }

    /**
     * The {@code WAIT}/{@code WAITAOF} to pipeline after a write, given the replicas connected
     * now; null when there is nothing to wait for.
     */
    public Object[] command(int connected) {
        if (off) {
            return null;
        }
        long need = replicas == AUTO ? connected : replicas;
        if (aof) {
            return new Object[] {"WAITAOF", 1L, need, timeoutMs};
        }
        return need <= 0 ? null : new Object[] {"WAIT", need, timeoutMs};
    }

    /** How many replicas confirmed: WAIT's count; WAITAOF's [local, replicas] (-1 if not local). */
    static long confirmed(Object[] command, Object reply) {
        if (reply instanceof java.util.List<?> list && list.size() == 2) {
            return Replies.number(list.get(0), 0) >= 1 ? Replies.number(list.get(1), 0) : -1;
        }
        if (reply instanceof io.rlock.internal.transport.RespError error && "WAITAOF".equals(command[0])) {
            throw new RLockException(error.code(), "Confirm.aof() needs WAITAOF (Redis 7.2 or newer) and"
                    + " appendonly on the primary: " + error.message());
        }
        return Replies.number(Replies.check(reply), 0);
    }

    /**
     * Checks a write's confirmation: nothing when enough replicas confirmed, or under
     * {@link #warnOnly()} (a warning is logged); else the {@link Unconfirmed} to undo and report.
     */
    public void settle(Object[] command, Object waitReply, String what) {
        long required = (Long) command[command.length - 2];
        long got = confirmed(command, waitReply);
        if (got >= required) {
            return;
        }
        Unconfirmed unconfirmed = new Unconfirmed((int) Math.max(got, 0), (int) required, timeoutMs);
        if (warn) {
            LOG.log(System.Logger.Level.WARNING, "rlock: " + what + " " + unconfirmed.getMessage());
            return;
        }
        throw unconfirmed;
    }

    @Override
    public String toString() {
        return off ? "Confirm.off()" : (replicas == AUTO ? "Confirm.auto()" : "Confirm.replicas(" + replicas + ")")
                + (aof ? ".withAof(true)" : "") + ".timeout(" + timeoutMs + " ms)" + (warn ? ".warnOnly()" : "");
    }
}
