package io.rlock.internal;

import io.rlock.*;

import java.time.Duration;
import java.util.Map;

/**
 * What {@link ROwnedSemaphore} and {@link RPermitExpirableSemaphore} share: both are one
 * {@code RSEM.*} semaphore, counted the same way; only what a permit belongs to differs. Setting
 * and adding permits carry a request id: re-sent after a lost reply, they count once and answer
 * as the first call.
 */
public abstract class PermitsHandle extends Handle {
    PermitsHandle(Engine engine, String name) {
        super(engine, name);
    }

    public boolean trySetPermits(int permits) {
        return Long.valueOf(1).equals(engine.write(name, "RSEM.SETPERMITS", name, (long) permits, "ID", Engine.requestId()));
    }

    public void addPermits(int permits) {
        engine.write(name, "RSEM.ADDPERMITS", name, (long) permits, "ID", Engine.requestId());
    }

    /**
     * Sets the time to live of the semaphore's keys, its counter and its holders (docs/semaphore.md,
     * "Layout"), as Redisson's covers its timeout set: so no holder outlives the count it took
     * from. True when either exists.
     */
    public boolean expire(Duration timeToLive) {
        long ms = Math.max(1, timeToLive.toMillis());
        boolean counter = Replies.number(engine.write(name, "PEXPIRE", name, ms), 0) > 0;
        String holders = holdersKey(name);
        return Replies.number(engine.write(holders, "PEXPIRE", holders, ms), 0) > 0 || counter;
    }

    /** The server's holders hash of the semaphore at {@code key}: {@code {key}:rlock:holders}, in the key's slot. */
    static String holdersKey(String key) {
        return (key.contains("{") ? key : "{" + key + "}") + ":rlock:holders";
    }

    public int availablePermits() {
        Map<String, Object> info = engine.info("RSEM.INFO", name);
        return info == null ? 0 : (int) Replies.number(info.get("available"), 0);
    }
}
