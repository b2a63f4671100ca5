package io.rlock.bench;

import io.rlock.testing.AdminConnection;
import io.rlock.testing.RedisServer;

/**
 * The cost tests' replicated setup: a primary with one replica online ({@code ROLE} lists it, so
 * {@code Confirm.auto()} waits for it from the first call), an admin connection to the primary,
 * and our client on the primary ({@link Side#ourClient}); closed in reverse.
 */
final class Replicated implements AutoCloseable {
    final AdminConnection admin;
    final Side.OurClient client;
    private final RedisServer primary;
    private final RedisServer replica;

    private Replicated(RedisServer primary, RedisServer replica, AdminConnection admin, Side.OurClient client) {
        this.primary = primary;
        this.replica = replica;
        this.admin = admin;
        this.client = client;
    }

    static Replicated start() throws Exception {
        RedisServer primary = RedisServer.start();
        RedisServer replica = null;
        AdminConnection admin = null;
        try {
            replica = RedisServer.start("--replicaof", "127.0.0.1", String.valueOf(primary.port));
            admin = primary.admin();
            Pairs.awaitReplicaOnline(admin);
            return new Replicated(primary, replica, admin, Side.ourClient(primary.uri()));
        } catch (Exception | Error e) {
            try (RedisServer p = primary; RedisServer r = replica; AdminConnection a = admin) {
                throw e;
            }
        }
    }

    @Override
    public void close() throws Exception {
        try (RedisServer p = primary; RedisServer r = replica; AdminConnection a = admin; Side.OurClient c = client) {
            // closed in reverse order of the resources
        }
    }
}
