package io.rlock;

import io.rlock.internal.*;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;

/** A test class's own redis-server with the module, and an admin connection to it. */
abstract class OneServer {
    static RedisServer server;
    static AdminConnection admin;

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start();
        admin = server.admin();
    }

    @AfterAll
    static void stop() {
        admin.close();
        server.close();
    }
}
