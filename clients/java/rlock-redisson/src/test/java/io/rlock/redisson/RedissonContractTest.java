package io.rlock.redisson;

import io.rlock.RLockClient;
import io.rlock.testing.TransportContract;
import java.util.ArrayList;
import java.util.List;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.SentinelServersConfig;

/**
 * The transport contract (rlock-test-support's {@link TransportContract}) over Redisson: a
 * RedissonClient made from a single-server, a Sentinel or a Cluster {@code Config}, each the
 * user's own, shut down after each test.
 */
class RedissonContractTest extends TransportContract {
    private final List<RedissonClient> made = new ArrayList<>();

    private RLockClient over(Config config) {
        RedissonClient redisson = Redisson.create(config);
        made.add(redisson);
        return RLocks.of(redisson);
    }

    @Override
    protected RLockClient standalone(HostPort server) {
        Config config = new Config();
        config.useSingleServer().setAddress(address(server)).setConnectionMinimumIdleSize(1).setSubscriptionConnectionMinimumIdleSize(1);
        return over(config);
    }

    @Override
    protected RLockClient sentinel(String masterName, List<HostPort> sentinels) {
        Config config = new Config();
        SentinelServersConfig sentinel = config.useSentinelServers().setMasterName(masterName)
                .setMasterConnectionMinimumIdleSize(1).setSlaveConnectionMinimumIdleSize(1).setSubscriptionConnectionMinimumIdleSize(1);
        sentinels.forEach(node -> sentinel.addSentinelAddress(address(node)));
        return over(config);
    }

    @Override
    protected RLockClient cluster(List<HostPort> primaries) {
        Config config = new Config();
        ClusterServersConfig cluster = config.useClusterServers()
                .setMasterConnectionMinimumIdleSize(1).setSlaveConnectionMinimumIdleSize(1).setSubscriptionConnectionMinimumIdleSize(1);
        primaries.forEach(node -> cluster.addNodeAddress(address(node)));
        return over(config);
    }

    private static String address(HostPort node) {
        return "redis://" + node.host() + ":" + node.port();
    }

    @Override
    protected void closeClients() {
        made.forEach(RedissonClient::shutdown);
        made.clear();
    }
}
