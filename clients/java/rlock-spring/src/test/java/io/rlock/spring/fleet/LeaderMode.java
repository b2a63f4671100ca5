package io.rlock.spring.fleet;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.leader.event.OnRevokedEvent;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.integration.support.locks.LockRegistry;

/** Leader election through whatever LockRegistry the context has (rlock's, auto-configured). */
@Configuration(proxyBeanMethods = false)
class LeaderMode {
    @Bean
    LockRegistryLeaderInitiator leaderInitiator(LockRegistry<?> registry, @Value("${fleet.name}") String name) {
        FleetApp.tell("REGISTRY " + registry.getClass().getName());
        return new LockRegistryLeaderInitiator(registry, new DefaultCandidate(name, "fleet-leader"));
    }

    @EventListener
    void granted(OnGrantedEvent event) {
        FleetApp.tell("GRANTED");
    }

    @EventListener
    void revoked(OnRevokedEvent event) {
        FleetApp.tell("REVOKED");
    }
}
