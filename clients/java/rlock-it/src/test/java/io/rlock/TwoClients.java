package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/** {@link OneServer}, two clients of it per test, and a key named after the test method. */
abstract class TwoClients extends OneServer {
    private final String prefix;
    RLockClient client;
    RLockClient other;
    String name;

    TwoClients(String prefix) {
        this.prefix = prefix;
    }

    @BeforeEach
    void connect(TestInfo test) {
        client = TestClients.create(server.uri());
        other = TestClients.create(server.uri());
        name = prefix + ":" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void disconnect() {
        client.close();
        other.close();
    }
}
