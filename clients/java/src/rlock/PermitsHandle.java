package rlock;

import java.util.Map;

/**
 * What {@link ROwnedSemaphore} and {@link RPermitExpirableSemaphore} share: both are one
 * {@code RSEM.*} semaphore, counted the same way; only what a permit belongs to differs. Setting
 * and adding permits carry a request id: re-sent after a lost reply, they count once and answer
 * as the first call.
 */
abstract class PermitsHandle extends Handle {
    PermitsHandle(Engine engine, String name) {
        super(engine, name);
    }

    public boolean trySetPermits(int permits) {
        return Long.valueOf(1).equals(engine.write(name, "RSEM.SETPERMITS", name, (long) permits, "ID", Engine.requestId()));
    }

    public void addPermits(int permits) {
        engine.write(name, "RSEM.ADDPERMITS", name, (long) permits, "ID", Engine.requestId());
    }

    public int availablePermits() {
        Map<String, Object> info = engine.info("RSEM.INFO", name);
        return info == null ? 0 : (int) Replies.number(info.get("available"), 0);
    }
}
