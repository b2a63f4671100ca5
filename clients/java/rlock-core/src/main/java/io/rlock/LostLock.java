package io.rlock;

import io.rlock.internal.*;

/**
 * A holding that ended without its owner's release, as reported to a {@link LockLostListener}.
 *
 * @param name  the lock's (semaphore's) name
 * @param type  {@code lock}, {@code read}, {@code write} or {@code permits}
 * @param owner the owner id: {@code <client id>:<thread id>}, or a permit id
 * @param token the fencing token of the holding that ended
 */
public record LostLock(String name, String type, String owner, long token) {
}
