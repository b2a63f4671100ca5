package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.RedisServer;

/** rediss:// through the JDK's SSLSocket, to a redis-server started with --tls-port. */
class TlsTest {
    static Path certs;
    static RedisServer server;
    static AdminConnection admin;
    static int tlsPort;
    static SSLContext trusting;

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
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (InputStream ca = Files.newInputStream(certs.resolve("ca.crt"))) {
            trust.setCertificateEntry("ca", (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(ca));
        }
        TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init(trust);
        trusting = SSLContext.getInstance("TLS");
        trusting.init(null, factory.getTrustManagers(), null);
    }

    @AfterAll
    static void stop() throws IOException {
        admin.close();
        server.close();
        try (var files = Files.walk(certs)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
    }

    private static RLockOptions options() {
        return new RLockOptions().sslSocketFactory(trusting.getSocketFactory());
    }

    @Test
    void locksAndWaitsOverTls() throws Exception {
        String name = "tls:lock";
        try (RLockClient client = RLockClient.create("rediss://localhost:" + tlsPort, options());
                RLockClient other = RLockClient.create("rediss://127.0.0.1:" + tlsPort, options())) {
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
        }
    }

    @Test
    void anUntrustedCertificateOrAWrongHostIsRefused() {
        RLockException untrusted = assertThrows(RLockException.class,
                () -> RLockClient.create("rediss://localhost:" + tlsPort, new RLockOptions().connectTimeout(Duration.ofMillis(500))));
        assertTrue(untrusted.getMessage().contains("cannot connect"), untrusted.getMessage());
        assertThrows(RLockException.class, () -> RLockClient.create("redis://localhost:" + tlsPort,
                new RLockOptions().connectTimeout(Duration.ofMillis(500)).responseTimeout(Duration.ofMillis(500))),
                "plain text to the TLS port");
        // The certificate names localhost and 127.0.0.1, not this name for the same address.
        assertThrows(RLockException.class, () -> RLockClient.create("rediss://127.0.0.2:" + tlsPort,
                options().connectTimeout(Duration.ofMillis(500))));
        try (RLockClient unchecked = RLockClient.create("rediss://127.0.0.2:" + tlsPort, options().verifyHostname(false))) {
            assertFalse(unchecked.getLock("tls:unchecked").isLocked());
        }
    }
}
