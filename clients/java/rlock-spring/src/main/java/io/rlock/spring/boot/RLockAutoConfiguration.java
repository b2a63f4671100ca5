package io.rlock.spring.boot;

import io.rlock.spring.integration.RLockRegistry;
import io.rlock.spring.shedlock.RLockProvider;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * With this jar on the class path and a {@link RedisConnectionFactory} in the context (Spring
 * Boot's own, from {@code spring.data.redis.*}): an {@link RLockRegistry} when Spring Integration
 * is there, an {@link RLockProvider} when ShedLock is there; each only when the application
 * defined no bean of its type. {@code rlock.registry-key} (default {@code rlock}) and
 * {@code rlock.shedlock.environment} (default {@code default}) name their keys.
 */
@AutoConfiguration(afterName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass(RedisConnectionFactory.class)
public class RLockAutoConfiguration {

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(LockRegistry.class)
    @ConditionalOnBean(RedisConnectionFactory.class)
    static class SpringIntegration {
        @Bean
        @ConditionalOnMissingBean(LockRegistry.class)
        RLockRegistry rlockRegistry(RedisConnectionFactory connectionFactory,
                @Value("${rlock.registry-key:rlock}") String registryKey) {
            return new RLockRegistry(connectionFactory, registryKey);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(LockProvider.class)
    @ConditionalOnBean(RedisConnectionFactory.class)
    static class ShedLock {
        @Bean
        @ConditionalOnMissingBean(LockProvider.class)
        RLockProvider rlockShedLockProvider(RedisConnectionFactory connectionFactory,
                @Value("${rlock.shedlock.environment:default}") String environment) {
            return new RLockProvider(connectionFactory, environment);
        }
    }
}
