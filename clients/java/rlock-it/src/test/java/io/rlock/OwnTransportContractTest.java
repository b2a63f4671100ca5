package io.rlock;

import io.rlock.testing.TransportContract;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The transport contract over the engine's own RESP client ({@code RLockClient.create}, the
 * {@code RespTransport}), the second transport the contract runs for: what it checks holds for
 * the engine, not for one client library.
 */
class OwnTransportContractTest extends TransportContract {
    @Override
    protected RLockClient standalone(HostPort server) {
        return RLockClient.create("redis://" + server.host() + ":" + server.port());
    }

    @Override
    protected RLockClient sentinel(String masterName, List<HostPort> sentinels) {
        return RLockClient.create("redis-sentinel://"
                + sentinels.stream().map(s -> s.host() + ":" + s.port()).collect(Collectors.joining(",")) + "/" + masterName);
    }

    @Override
    protected RLockClient cluster(List<HostPort> primaries) {
        return RLockClient.create("redis://" + primaries.get(0).host() + ":" + primaries.get(0).port());
    }

    @Override
    protected void closeClients() {
        // the RLockClients own their connections; nothing else was made
    }
}
