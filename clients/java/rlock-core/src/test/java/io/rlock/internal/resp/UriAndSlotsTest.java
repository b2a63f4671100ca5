package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class UriAndSlotsTest {
    @Test
    void uris() {
        RedisUri plain = RedisUri.parse("redis://localhost");
        assertFalse(plain.tls);
        assertEquals("localhost", plain.host);
        assertEquals(6379, plain.port);
        assertNull(plain.user);
        assertNull(plain.password);
        assertEquals(0, plain.db);

        RedisUri full = RedisUri.parse("rediss://alice:p%40ss%3Aw0rd@redis.example.com:6380/3");
        assertTrue(full.tls);
        assertEquals("alice", full.user);
        assertEquals("p@ss:w0rd", full.password);
        assertEquals("redis.example.com", full.host);
        assertEquals(6380, full.port);
        assertEquals(3, full.db);

        RedisUri passwordOnly = RedisUri.parse("redis://:secret@127.0.0.1:7000/");
        assertNull(passwordOnly.user);
        assertEquals("secret", passwordOnly.password);
        assertEquals(0, passwordOnly.db);

        RedisUri v6 = RedisUri.parse("redis://[::1]:7001");
        assertEquals("::1", v6.host);
        assertEquals(7001, v6.port);
        assertFalse(full.toString().contains("p@ss"), "the password is not printed");

        for (String bad : new String[] {"http://localhost", "redis://", "redis://h:1/x", "localhost:6379", "redis://h/-1"}) {
            assertThrows(IllegalArgumentException.class, () -> RedisUri.parse(bad), bad);
        }
    }

    @Test
    void sentinelUris() {
        RedisUri plain = RedisUri.parse("redis-sentinel://:p%40ss@h1:26379,h2/mymaster");
        assertFalse(plain.tls);
        assertEquals("mymaster", plain.masterName);
        assertEquals(java.util.List.of("h1:26379", "h2:26379"), plain.sentinels);
        assertEquals("p@ss", plain.password);
        RedisUri tls = RedisUri.parse("rediss-sentinel://h1:26380#other");
        assertTrue(tls.tls);
        assertEquals("other", tls.masterName);
        assertEquals("rediss-sentinel://h1:26380/other", tls.toString());
        assertThrows(IllegalArgumentException.class, () -> RedisUri.parse("rediss-sentinel://h1:26380/"));
    }

    @Test
    void slotsAsRedisClusterComputesThem() {
        assertEquals(0x31C3, Cluster.crc16("123456789".getBytes(StandardCharsets.US_ASCII), 0, 9));
        assertEquals(12182, Cluster.slot("foo"));
        assertEquals(3443, Cluster.slot("{user1000}.following")); // CLUSTER KEYSLOT says so
        assertEquals(Cluster.slot("user1000"), Cluster.slot("{user1000}.followers"));
        assertEquals(10595, Cluster.slot(new byte[] {'{', '}', 'x'}), "an empty tag hashes the whole key");
        assertEquals(5061, Cluster.slot("foo{bar}{zap}"), "the first tag counts");
        assertEquals(5061, Cluster.slot("bar"));
        assertEquals(Cluster.slot("foo{{bar}}"), Cluster.slot("foo{{bar}}"));
        assertEquals(Cluster.slot("{bar"), Cluster.slot("{bar"));
    }

    @Test
    void redirections() {
        Cluster.Redirect moved = Cluster.redirect(new RespError("MOVED 3999 127.0.0.1:6381"), "h");
        assertFalse(moved.ask);
        assertEquals(3999, moved.slot);
        assertEquals("127.0.0.1", moved.host);
        assertEquals(6381, moved.port);
        Cluster.Redirect ask = Cluster.redirect(new RespError("ASK 12 :7002"), "10.0.0.5");
        assertTrue(ask.ask);
        assertEquals("10.0.0.5", ask.host, "an empty host is the answering node's");
        Cluster.Redirect v6 = Cluster.redirect(new RespError("MOVED 1 [::1]:7000"), "h");
        assertEquals("::1", v6.host);
        assertNull(Cluster.redirect(new RespError("ERR something"), "h"));
        assertNull(Cluster.redirect(new RespError("MOVED x y"), "h"));
        assertNull(Cluster.redirect(new RespError("MOVED 99999 h:1"), "h"));
    }
}
