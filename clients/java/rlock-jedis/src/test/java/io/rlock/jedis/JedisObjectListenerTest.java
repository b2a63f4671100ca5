package io.rlock.jedis;

import static io.rlock.testing.Admin.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import io.rlock.DeletedObjectListener;
import io.rlock.ExpiredObjectListener;
import io.rlock.RLock;
import io.rlock.RLockClient;
import io.rlock.testing.Admin;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;

/**
 * {@link RLock#addListener} over RESP2, where the keyevents arrive on the session's subscriber
 * connection, not on the one that runs the calls: Jedis's sessions are the one RESP2 transport
 * (the engine's own RESP client, whose {@code protocol(2)} ObjectListenerTest ran, is gone).
 */
class JedisObjectListenerTest {
    @Test
    void aReleaseIsHeardByTheTimeUnlockReturnsAndALeaseEndLater() throws Exception {
        List<String> told = new CopyOnWriteArrayList<>();
        try (RedisServer server = RedisServer.start("--notify-keyspace-events", "Egx");
                AdminConnection admin = server.admin();
                RLockClient client = JedisRLocks.of(new HostAndPort("127.0.0.1", server.port),
                        DefaultJedisClientConfig.builder().build())) {
            RLock lock = client.getLock("listened");
            lock.addListener((ExpiredObjectListener) name -> told.add("expired " + name));
            lock.addListener((DeletedObjectListener) name -> told.add("deleted " + name));
            assertThat(Admin.clientsNamed(admin, "rlock-java:" + client.getId()))
                    .as("RESP2: a command and a subscriber connection").hasSize(2).allMatch(line -> line.contains("resp=2"));
            lock.lock();
            lock.unlock();
            assertThat(told).as("told before unlock() returned").containsExactly("deleted listened");
            lock.lock(200, TimeUnit.MILLISECONDS);
            eventually(3000, "the lease end heard", () -> told.size() == 2);
            assertThat(told.get(1)).isEqualTo("expired listened");
        }
    }
}
