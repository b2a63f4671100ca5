package io.rlock.spring.shedlock;

import java.util.List;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.script.DefaultRedisScript;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * The provider's commands of its own, on the application's Spring Data Redis connections: the
 * rlock client's API has no hold cap and no way to leave a lease behind, and neither needs the
 * holder's connection (both name the holding by owner or token).
 */
final class ShedLockCommands {
    /**
     * The early unlock: in one step, the owner's release and a plain lease of the rest of
     * {@code lockAtLeastFor} under another owner, bound to no connection. Nobody can take the
     * lock in between; the lease's token, or nil when the owner no longer held the lock.
     */
    private static final RedisScript<Long> LEAVE_LEASE = new DefaultRedisScript<>("""
            if redis.call('rlock.release', KEYS[1], ARGV[1]) == 0 then
              return redis.call('rlock.acquire', KEYS[1], ARGV[2], 'PX', ARGV[3])
            end
            return false
            """, Long.class);

    /** {@code RLOCK.FORCERELEASE key TOKEN token} (a script: its integer reply reads as one). */
    private static final RedisScript<Long> FORCE_RELEASE = new DefaultRedisScript<>(
            "return redis.call('rlock.forcerelease', KEYS[1], 'TOKEN', ARGV[1])", Long.class);

    private ShedLockCommands() {
    }

    /** Turns {@code owner}'s holding into a lease of {@code leaseMs} held by {@code leaseOwner}. */
    static Long leaveLease(StringRedisTemplate template, String key, String owner, String leaseOwner, long leaseMs) {
        return template.execute(LEAVE_LEASE, List.of(key), owner, leaseOwner, Long.toString(leaseMs));
    }

    /** Ends the holding with {@code token} (a later holding is untouched); whether one ended. */
    static boolean forceRelease(StringRedisTemplate template, String key, long token) {
        return Long.valueOf(1).equals(template.execute(FORCE_RELEASE, List.of(key), Long.toString(token)));
    }
}
