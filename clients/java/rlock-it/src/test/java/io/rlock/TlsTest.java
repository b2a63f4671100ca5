package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.SslVerifyMode;
import io.rlock.lettuce.LettuceRLocks;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.RedisServer;

/**
 * TLS through the user's Lettuce client (its {@code SslOptions}: the test CA trusted, the JDK's
 * provider; the URI's {@code verifyPeer}), to a redis-server started with --tls-port.
 */
class TlsTest {
    static Path certs;
    static RedisServer server;
    static AdminConnection admin;
    static int tlsPort;

    static void openssl(String... args) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of("openssl"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).directory(certs.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        if (process.waitFor() != 0) {
            throw new IOException("openssl " + String.join(" ", args) + ": " + output);
        }
    }

    @BeforeAll
    static void start() throws Exception {
        certs = Files.createTempDirectory("rlock-java-tls-");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                "-subj", "/CN=rlock test CA");
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost");
        Files.writeString(certs.resolve("san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.crt", "-days", "2", "-extfile", "san.ext");
        tlsPort = RedisServer.freePort();
        server = RedisServer.start("--tls-port", String.valueOf(tlsPort),
                "--tls-cert-file", certs.resolve("server.crt").toString(),
                "--tls-key-file", certs.resolve("server.key").toString(),
                "--tls-ca-cert-file", certs.resolve("ca.crt").toString(),
                "--tls-auth-clients", "no");
        admin = server.admin();
    }

    @AfterAll
    static void stop() throws IOException {
        admin.close();
        server.close();
        try (var files = Files.walk(certs)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
    }

    /** A Lettuce client of the user's, trusting the test CA (or, with null, the JDK's default trust). */
    private static RedisClient lettuce(Path trustedCa) {
        RedisClient client = RedisClient.create();
        SslOptions.Builder ssl = SslOptions.builder().jdkSslProvider();
        if (trustedCa != null) {
            ssl.trustManager(trustedCa.toFile());
        }
        client.setOptions(ClientOptions.builder().sslOptions(ssl.build())
                .socketOptions(SocketOptions.builder().connectTimeout(Duration.ofSeconds(2)).build()).build());
        return client;
    }

    private static RedisURI uri(String scheme, String host, SslVerifyMode verify) {
        return RedisURI.builder().withHost(host).withPort(tlsPort).withSsl(scheme.equals("rediss"))
                .withVerifyPeer(verify).withTimeout(Duration.ofSeconds(2)).build();
    }

    @Test
    void locksAndWaitsOverTls() throws Exception {
        String name = "tls:lock";
        RedisClient lettuce = lettuce(certs.resolve("ca.crt"));
        try (RLockClient client = LettuceRLocks.of(lettuce, uri("rediss", "localhost", SslVerifyMode.FULL));
                RLockClient other = LettuceRLocks.of(lettuce, uri("rediss", "127.0.0.1", SslVerifyMode.FULL))) {
            RLock lock = client.getLock(name);
            lock.lock();
            assertTrue(lock.isHeldByCurrentThread());
            CompletableFuture<Long> waiter = Async.grantedToken(other.getLock(name));
            eventually(5000, "queued over TLS", () -> Admin.waiters(admin, name) == 1);
            long mine = lock.getToken();
            lock.unlock();
            assertTrue(waiter.get(5, TimeUnit.SECONDS) > mine);
            List<String> clients = Admin.clientsNamed(admin, "rlock-java:" + client.getId());
            assertEquals(1, clients.size());
            assertTrue(clients.get(0).contains("laddr=127.0.0.1:" + tlsPort), "connected to the TLS port: " + clients.get(0));
        } finally {
            lettuce.shutdown();
        }
    }

    @Test
    void anUntrustedCertificateOrAWrongHostIsRefused() {
        RedisClient untrusting = lettuce(null);
        RedisClient trusting = lettuce(certs.resolve("ca.crt"));
        try {
            RLockException untrusted = assertThrows(RLockException.class,
                    () -> LettuceRLocks.of(untrusting, uri("rediss", "localhost", SslVerifyMode.FULL)));
            assertTrue(untrusted.getMessage().contains("cannot connect"), untrusted.getMessage());
            assertThrows(RLockException.class, () -> LettuceRLocks.of(trusting, uri("redis", "localhost", SslVerifyMode.NONE)),
                    "plain text to the TLS port");
            // The certificate names localhost and 127.0.0.1, not this name for the same address.
            assertThrows(RLockException.class, () -> LettuceRLocks.of(trusting, uri("rediss", "127.0.0.2", SslVerifyMode.FULL)));
            try (RLockClient unchecked = LettuceRLocks.of(trusting, uri("rediss", "127.0.0.2", SslVerifyMode.CA))) {
                assertFalse(unchecked.getLock("tls:unchecked").isLocked());
            }
        } finally {
            untrusting.shutdown();
            trusting.shutdown();
        }
    }
}
