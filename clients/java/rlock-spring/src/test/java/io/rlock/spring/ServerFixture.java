package io.rlock.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import io.lettuce.core.protocol.ProtocolVersion;
import io.rlock.testing.RedisServer;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * A redis-server with the module on a free port (rlock-test-support's), and the application's
 * side of it: a started Lettuce {@code RedisConnectionFactory} and a template for the tests' own
 * checks.
 */
public final class ServerFixture implements AutoCloseable {
    public final RedisServer server;
    public final LettuceConnectionFactory connectionFactory;
    public final StringRedisTemplate redis;
    private final RedisClient adminClient;
    private final StatefulRedisConnection<String, String> admin;

    private ServerFixture(RedisServer server) {
        this.server = server;
        this.adminClient = RedisClient.create(RedisURI.create("127.0.0.1", server.port));
        adminClient.setOptions(ClientOptions.builder().protocolVersion(ProtocolVersion.RESP2).build());
        this.admin = adminClient.connect();
        this.connectionFactory = connectionFactory(server.port);
        this.redis = new StringRedisTemplate(connectionFactory);
    }

    public static ServerFixture start() throws Exception {
        return new ServerFixture(RedisServer.start());
    }

    /** A started Lettuce factory for 127.0.0.1:{@code port}; the caller destroys it. */
    public static LettuceConnectionFactory connectionFactory(int port) {
        LettuceConnectionFactory factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port));
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    /**
     * Runs one command on the test's own Lettuce connection (RESP2) and returns its reply:
     * Spring Data Redis's generic {@code execute} reads bulk strings only.
     */
    public Object call(String command, String... args) {
        CommandArgs<String, String> arguments = new CommandArgs<>(StringCodec.UTF8);
        for (String arg : args) {
            arguments.add(arg);
        }
        ProtocolKeyword keyword = new ProtocolKeyword() {
            @Override
            public byte[] getBytes() {
                return command.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            }

            @Override
            public String toString() {
                return command;
            }
        };
        List<Object> reply = admin.sync().dispatch(keyword, new NestedMultiOutput<>(StringCodec.UTF8), arguments);
        return reply;
    }

    /** {@code RLOCK.INFO key} as a map of strings to replies (empty when the lock is free). */
    public Map<String, Object> lockInfo(String key) {
        Object reply = call("RLOCK.INFO", key);
        Map<String, Object> info = new java.util.LinkedHashMap<>();
        if (reply instanceof List<?> flat) {
            for (int i = 0; i + 1 < flat.size(); i += 2) {
                info.put(text(flat.get(i)), flat.get(i + 1) instanceof byte[] b ? text(b) : flat.get(i + 1));
            }
        }
        return info;
    }

    /** Polls {@code condition} every 10 ms until it holds; fails after {@code ms}. */
    public static void eventually(long ms, String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + ms * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + ms + " ms: " + what);
            }
            Thread.sleep(10);
        }
    }

    private static String text(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(o);
    }

    @Override
    public void close() {
        admin.close();
        adminClient.shutdown();
        connectionFactory.destroy();
        server.close();
    }
}
