package io.rlock.spring.fleet;

import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;

/**
 * One application instance of the fleet tests, a JVM of its own: a Spring Boot application whose
 * RedisConnectionFactory comes from {@code spring.data.redis.port} and whose lock beans come from
 * rlock's auto-configuration alone. {@code -Dfleet.mode=leader} runs a
 * LockRegistryLeaderInitiator ({@link LeaderMode}); {@code -Dfleet.mode=shedlock} a
 * {@code @SchedulerLock} job ({@link ShedLockMode}). Tells the test what happens on stdout, one
 * {@code FLEET ...} line per event.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class FleetApp {
    public static void main(String[] args) {
        String mode = System.getProperty("fleet.mode");
        Class<?> config = switch (mode == null ? "" : mode) {
            case "leader" -> LeaderMode.class;
            case "shedlock" -> ShedLockMode.class;
            default -> throw new IllegalArgumentException("-Dfleet.mode=leader|shedlock, got " + mode);
        };
        SpringApplication app = new SpringApplication(FleetApp.class, config);
        app.setDefaultProperties(Map.of("spring.main.banner-mode", "off", "logging.level.root", "WARN"));
        app.run(args);
        tell("STARTED");
    }

    /** One line for the test; stdout is flushed at once so that the test sees it when it happens. */
    static synchronized void tell(String event) {
        System.out.println("FLEET " + event + " " + System.currentTimeMillis());
        System.out.flush();
    }
}
