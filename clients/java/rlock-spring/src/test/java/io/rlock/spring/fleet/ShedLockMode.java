package io.rlock.spring.fleet;

import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * A {@code @SchedulerLock} job that ticks every 200 ms and runs for {@code fleet.job-ms}; the
 * lock provider is whatever the context has (rlock's, auto-configured). Each run appends its
 * start and end to the list {@code fleet:runs} (same clock as the test's: one machine).
 */
@Configuration(proxyBeanMethods = false)
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "PT30S")
public class ShedLockMode {
    private final StringRedisTemplate redis;
    private final String name;
    private final long jobMs;

    public ShedLockMode(StringRedisTemplate redis, LockProvider provider, @Value("${fleet.name}") String name,
            @Value("${fleet.job-ms:600}") long jobMs) {
        this.redis = redis;
        this.name = name;
        this.jobMs = jobMs;
        FleetApp.tell("PROVIDER " + provider.getClass().getName());
    }

    @Scheduled(fixedDelay = 200)
    @SchedulerLock(name = "fleet-job", lockAtMostFor = "PT30S")
    public void job() throws InterruptedException {
        redis.opsForList().rightPush("fleet:runs", "start " + name + " " + System.currentTimeMillis());
        FleetApp.tell("RUNNING");
        Thread.sleep(jobMs);
        redis.opsForList().rightPush("fleet:runs", "end " + name + " " + System.currentTimeMillis());
    }
}
