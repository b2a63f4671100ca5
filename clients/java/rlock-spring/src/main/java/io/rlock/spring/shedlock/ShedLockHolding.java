package io.rlock.spring.shedlock;

import io.rlock.RLock;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledFuture;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * One run's hold of a job's lock: a watchdog holding of the thread that took it, capped at
 * {@code lockAtMostUntil}. {@link #unlock()} before {@code lockAtLeastUntil} leaves the lock to a
 * plain lease that ends then, whatever becomes of this process.
 */
final class ShedLockHolding extends AbstractSimpleLock {
    private final RLockProvider provider;
    private final RLock lock;
    private final long threadId;
    private final long token;
    private final ScheduledFuture<?> cap;

    ShedLockHolding(RLockProvider provider, RLock lock, LockConfiguration configuration, long threadId) {
        this(provider, lock, configuration, threadId, lock.getToken());
    }

    private ShedLockHolding(RLockProvider provider, RLock lock, LockConfiguration configuration, long threadId,
            long token) {
        super(configuration);
        this.provider = provider;
        this.lock = lock;
        this.threadId = threadId;
        this.token = token;
        this.cap = provider.capAt(lock, token, configuration.getLockAtMostUntil());
    }

    @Override
    protected void doUnlock() {
        cap.cancel(false);
        long rest = Duration.between(ClockProvider.now(), lockConfiguration.getLockAtLeastUntil()).toMillis();
        if (rest > 0) {
            String leaseOwner = "shedlock-at-least:" + UUID.randomUUID();
            ShedLockCommands.leaveLease(provider.template(), lock.getName(), provider.owner(threadId), leaseOwner, rest);
        }
        // After a lease was left, the client's own release finds nothing to release (the server
        // replies nil): it only forgets the holding. Likewise when the cap ended it first.
        releaseQuietly();
    }

    /**
     * ShedLock's extend: a new cap and a new {@code lockAtLeastFor}, from now; the holding is the
     * same (the watchdog keeps it).
     */
    @Override
    protected Optional<SimpleLock> doExtend(LockConfiguration extended) {
        cap.cancel(false);
        if (!lock.isHeldByThread(threadId)) {
            return Optional.empty();
        }
        return Optional.of(new ShedLockHolding(provider, lock, extended, threadId, token));
    }

    private void releaseQuietly() {
        try {
            if (RLockProvider.currentThread() == threadId) {
                lock.unlock();
            } else {
                lock.unlockAsync(threadId).join();
            }
        } catch (IllegalMonitorStateException | CompletionException notHeld) {
            // Not held any more (lease left, cap reached, connection lost): as RedisLockProvider,
            // an unlock of a lock that is no longer ours is silent.
        }
    }
}
