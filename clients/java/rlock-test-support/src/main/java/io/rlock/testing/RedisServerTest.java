package io.rlock.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The test servers are never mistaken for another suite's: a port another process took between
 * the free-port pick and the bind gets a new one, or (a port given) a clear failure, and a
 * foreign server answering PING on the port is never taken for ours.
 */
class RedisServerTest {
    private static long answeringPid(RedisServer server) throws Exception {
        try (AdminConnection admin = server.admin()) {
            String info = admin.call("INFO", "server").toString();
            return Long.parseLong(info.replaceAll("(?s).*\r\nprocess_id:(\\d+)\r\n.*", "$1"));
        }
    }

    @Test
    void aPortAnotherServerHoldsGetsANewOne() throws Exception {
        try (RedisServer foreign = RedisServer.start()) {
            Deque<Integer> taken = new ArrayDeque<>(List.of(foreign.port));
            try (RedisServer ours = RedisServer.picking(
                    () -> taken.isEmpty() ? RedisServer.freePort() : taken.pop(), RedisServer::start)) {
                assertNotEquals(foreign.port, ours.port);
                assertEquals(ours.process().pid(), answeringPid(ours));
            }
            assertEquals(foreign.process().pid(), answeringPid(foreign));
        }
    }

    @Test
    void aGivenPortAnotherServerHoldsFailsClearly() throws Exception {
        try (RedisServer foreign = RedisServer.start()) {
            RedisServer.PortTaken taken = assertThrows(RedisServer.PortTaken.class, () -> RedisServer.start(foreign.port));
            assertTrue(taken.getMessage().startsWith("redis-server: port " + foreign.port + " "), taken.getMessage());
            assertEquals(foreign.process().pid(), answeringPid(foreign));
        }
    }

    @Test
    void aClusterNodeWhoseBusPortIsTakenFailsClearly() throws Exception {
        int port;
        ServerSocket bus = null;
        do {
            port = RedisServer.freePort();
            try {
                bus = new ServerSocket(port + 10000, 1, InetAddress.getLoopbackAddress());
            } catch (java.io.IOException | IllegalArgumentException busy) {
                // that one's bus port is in use too (or out of range): another pick
            }
        } while (bus == null);
        try (ServerSocket held = bus) {
            int given = port;
            RedisServer.PortTaken taken = assertThrows(RedisServer.PortTaken.class,
                    () -> RedisServer.start(given, "--cluster-enabled", "yes"));
            assertTrue(taken.getMessage().contains("bus port " + (port + 10000)), taken.getMessage());
        }
    }

    @Test
    void aServerWithAPasswordIsRecognisedAsOurs() throws Exception {
        try (RedisServer secured = RedisServer.start("--requirepass", "s3cret");
                AdminConnection admin = secured.admin("s3cret")) {
            assertTrue(admin.call("INFO", "server").toString()
                    .contains("process_id:" + secured.process().pid()));
        }
    }
}
