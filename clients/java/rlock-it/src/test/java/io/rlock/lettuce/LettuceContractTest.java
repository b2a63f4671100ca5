package io.rlock.lettuce;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.rlock.RLockClient;
import io.rlock.testing.TransportContract;
import java.util.ArrayList;
import java.util.List;

/**
 * The transport contract (rlock-test-support's {@link TransportContract}) over Lettuce: a
 * {@link RedisClient} with a standalone or a Sentinel {@link RedisURI}, and a
 * {@link RedisClusterClient}, each the user's own, shut down after each test.
 */
class LettuceContractTest extends TransportContract {
    private final List<Runnable> shutdowns = new ArrayList<>();

    @Override
    protected RLockClient standalone(HostPort server) {
        RedisClient lettuce = RedisClient.create();
        shutdowns.add(lettuce::shutdown);
        return LettuceRLocks.of(lettuce, RedisURI.create(server.host(), server.port()));
    }

    @Override
    protected RLockClient sentinel(String masterName, List<HostPort> sentinels) {
        RedisURI.Builder uri = RedisURI.Builder.sentinel(sentinels.get(0).host(), sentinels.get(0).port(), masterName);
        sentinels.subList(1, sentinels.size()).forEach(sentinel -> uri.withSentinel(sentinel.host(), sentinel.port()));
        RedisClient lettuce = RedisClient.create();
        shutdowns.add(lettuce::shutdown);
        return LettuceRLocks.of(lettuce, uri.build());
    }

    @Override
    protected RLockClient cluster(List<HostPort> primaries) {
        List<RedisURI> seeds = primaries.stream().map(node -> RedisURI.create(node.host(), node.port())).toList();
        RedisClusterClient lettuce = RedisClusterClient.create(seeds);
        shutdowns.add(lettuce::shutdown);
        return LettuceRLocks.of(lettuce, seeds.get(0));
    }

    @Override
    protected void closeClients() {
        shutdowns.forEach(Runnable::run);
        shutdowns.clear();
    }
}
