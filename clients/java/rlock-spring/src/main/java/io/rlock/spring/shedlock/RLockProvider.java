package io.rlock.spring.shedlock;

import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.spring.RLockClients;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * ShedLock's {@code RedisLockProvider}, on rlock: replace
 * {@code new RedisLockProvider(connectionFactory)} by {@code new RLockProvider(connectionFactory)}.
 * The lock of job {@code name} is the rlock lock at {@code keyPrefix:environment:name} (the key
 * RedisLockProvider uses), held by the server's watchdog, so a killed instance's job is run by
 * another at its next tick, not {@code lockAtMostFor} later:
 * <ul>
 * <li>{@code lockAtMostFor} caps the hold: the provider force-releases the holding (by its
 *     fencing token: never a later holder's) when it is reached;</li>
 * <li>{@code lockAtLeastFor}: an unlock before it turns the holding into a plain lease that
 *     ends at {@code lockAtLeastUntil} and no longer depends on this process (see
 *     {@link ShedLockHolding}).</li>
 * </ul>
 */
public final class RLockProvider implements ExtensibleLockProvider, DisposableBean {
    /** RedisLockProvider's defaults. */
    public static final String DEFAULT_KEY_PREFIX = "job-lock";
    public static final String DEFAULT_ENVIRONMENT = "default";

    private final RLockClient client;
    private final boolean ownsClient;
    private final StringRedisTemplate template;
    private final String keyPrefix;
    private final ScheduledExecutorService caps = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "rlock-shedlock-caps");
        thread.setDaemon(true);
        return thread;
    });

    /** As {@code new RedisLockProvider(connectionFactory)}; closes its client on destroy. */
    public RLockProvider(RedisConnectionFactory connectionFactory) {
        this(connectionFactory, DEFAULT_ENVIRONMENT);
    }

    /** As {@code new RedisLockProvider(connectionFactory, environment)}. */
    public RLockProvider(RedisConnectionFactory connectionFactory, String environment) {
        // The names are checked before a client connects: a refused bean leaves no connection behind.
        this(keyPrefix(DEFAULT_KEY_PREFIX, environment), connectionFactory,
                RLockClients.fromConnectionFactory(connectionFactory), true);
    }

    /**
     * On a client the application manages (and closes); {@code connectionFactory} carries the
     * provider's few commands of its own (the cap's release, the lease left after an early unlock).
     */
    public RLockProvider(RLockClient client, RedisConnectionFactory connectionFactory, String environment,
            String keyPrefix) {
        this(keyPrefix(keyPrefix, environment), connectionFactory, client, false);
    }

    private RLockProvider(String keyPrefix, RedisConnectionFactory connectionFactory, RLockClient client,
            boolean ownsClient) {
        if (client == null || connectionFactory == null) {
            throw new IllegalArgumentException("the RLockClient and the RedisConnectionFactory are required");
        }
        this.client = client;
        this.ownsClient = ownsClient;
        this.template = new StringRedisTemplate(connectionFactory);
        this.keyPrefix = keyPrefix;
    }

    /** RedisLockProvider's key layout: {@code keyPrefix:environment:name}. */
    private static String keyPrefix(String keyPrefix, String environment) {
        if (environment == null || environment.isEmpty() || keyPrefix == null || keyPrefix.isEmpty()) {
            throw new IllegalArgumentException("the environment and the key prefix must not be empty");
        }
        return keyPrefix + ':' + environment + ':';
    }

    /**
     * Takes the job's lock if nobody holds it, this process's other threads included (a ShedLock
     * lock is not re-entered); empty otherwise.
     */
    @Override
    public Optional<SimpleLock> lock(LockConfiguration configuration) {
        RLock lock = client.getLock(keyPrefix + configuration.getName());
        if (lock.isHeldByCurrentThread() || !lock.tryLock()) {
            return Optional.empty();
        }
        return Optional.of(new ShedLockHolding(this, lock, configuration, currentThread()));
    }

    /** Releases {@code lock}'s holding with {@code token} when {@code until} is reached. */
    ScheduledFuture<?> capAt(RLock lock, long token, Instant until) {
        long delay = Math.max(0, Duration.between(ClockProvider.now(), until).toMillis());
        return caps.schedule(() -> ShedLockCommands.forceRelease(template, lock.getName(), token), delay,
                TimeUnit.MILLISECONDS);
    }

    StringRedisTemplate template() {
        return template;
    }

    String owner(long threadId) {
        return client.getId() + ':' + threadId;
    }

    @Override
    public void destroy() {
        caps.shutdownNow();
        if (ownsClient) {
            client.close();
        }
    }

    @SuppressWarnings("deprecation")
    static long currentThread() {
        return Thread.currentThread().getId();
    }
}
