package io.rlock.internal.resp;

import io.rlock.testing.AdminConnection;
import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import io.rlock.internal.transport.Connection;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.rlock.testing.RedisServer;

/** The connection: against a scripted fake server (fallback, timeouts) and a real one. */
class RespConnectionTest {
    static RedisServer server;

    @BeforeAll
    static void start() throws Exception {
        server = RedisServer.start();
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    /** A one-connection server that answers each command with what {@code script} returns (null: silence). */
    static final class FakeServer implements AutoCloseable {
        final ServerSocket listener = new ServerSocket(0);
        final List<String> received = new ArrayList<>();

        FakeServer(Function<List<String>, String> script) throws IOException {
            Thread thread = new Thread(() -> {
                try (Socket socket = listener.accept()) {
                    RespReader reader = new RespReader(socket.getInputStream());
                    OutputStream out = socket.getOutputStream();
                    while (true) {
                        List<String> command = ((List<?>) reader.read()).stream()
                                .map(x -> new String((byte[]) x, StandardCharsets.UTF_8)).toList();
                        synchronized (received) {
                            received.add(String.join(" ", command));
                        }
                        String reply = script.apply(command);
                        if (reply != null) {
                            out.write(reply.getBytes(StandardCharsets.UTF_8));
                            out.flush();
                        }
                    }
                } catch (IOException e) {
                    // closed
                }
            });
            thread.setDaemon(true);
            thread.start();
        }

        RespConnection.Settings settings() {
            return new RespConnection.Settings().address("127.0.0.1", listener.getLocalPort());
        }

        @Override
        public void close() throws IOException {
            listener.close();
        }
    }

    @Test
    void fallsBackToResp2WhenHelloIsRefused() throws Exception {
        try (FakeServer fake = new FakeServer(command -> switch (command.get(0)) {
            case "HELLO" -> "-ERR unknown command 'HELLO', with args beginning with: '3' \r\n";
            case "AUTH" -> command.size() == 3 && command.get(1).equals("u") && command.get(2).equals("p") ? "+OK\r\n" : "-WRONGPASS\r\n";
            case "CLIENT" -> command.get(1).equals("ID") ? ":42\r\n" : "+OK\r\n";
            case "SELECT" -> "+OK\r\n";
            default -> "+PONG\r\n";
        }); RespConnection conn = RespConnection.open(fake.settings().auth("u", "p").db(4).clientName("n"))) {
            assertEquals(2, conn.protocol());
            assertEquals(42, conn.clientId());
            assertEquals("PONG", conn.call("PING"));
            synchronized (fake.received) {
                assertEquals(List.of("HELLO 3 AUTH u p SETNAME n", "AUTH u p", "CLIENT SETNAME n", "CLIENT ID", "SELECT 4", "PING"),
                        fake.received);
            }
        }
    }

    @Test
    void aRefusedPasswordIsNotAFallback() throws Exception {
        try (FakeServer fake = new FakeServer(command -> "-WRONGPASS invalid username-password pair or user is disabled.\r\n")) {
            RespServerException refused = assertThrows(RespServerException.class,
                    () -> RespConnection.open(fake.settings().auth(null, "bad")));
            assertEquals("WRONGPASS", ((RespError) refused.reply()).code());
        }
    }

    @Test
    void aMissingReplyClosesTheConnection() throws Exception {
        CountDownLatch closed = new CountDownLatch(1);
        try (FakeServer fake = new FakeServer(command -> command.get(0).equals("HELLO")
                ? "%2\r\n+proto\r\n:3\r\n+id\r\n:7\r\n" : null)) {
            RespConnection conn = RespConnection.open(fake.settings().responseTimeout(Duration.ofMillis(200))
                    .listener(new Connection.Listener() {
                        @Override
                        public void closed(Connection connection, IOException cause) {
                            closed.countDown();
                        }
                    }));
            assertEquals(3, conn.protocol());
            assertEquals(7, conn.clientId());
            long start = System.nanoTime();
            assertThrows(InterruptedIOException.class, () -> conn.call("PING"));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms >= 190 && ms < 2000, "timed out after " + ms + " ms");
            assertTrue(closed.await(1, TimeUnit.SECONDS));
            assertFalse(conn.isOpen());
            assertThrows(IOException.class, () -> conn.call("PING"), "a closed connection refuses calls");
        }
    }

    @Test
    void repliesReachTheirCallersUnderConcurrency() throws Exception {
        try (RespConnection conn = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", server.port))) {
            assertEquals(3, conn.protocol());
            AtomicInteger wrong = new AtomicInteger();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                int id = t;
                threads.add(started(() -> {
                    for (int i = 0; i < 300; i++) {
                        String text = id + ":" + i;
                        try {
                            Object reply = conn.call("ECHO", text);
                            if (!text.equals(new String((byte[]) reply, StandardCharsets.UTF_8))) {
                                wrong.incrementAndGet();
                            }
                        } catch (IOException e) {
                            wrong.incrementAndGet();
                        }
                    }
                }));
            }
            for (Thread thread : threads) {
                thread.join();
            }
            assertEquals(0, wrong.get());
        }
    }

    static Thread started(Runnable body) {
        Thread thread = new Thread(body);
        thread.start();
        return thread;
    }

    static Connection.Listener pushesTo(BlockingQueue<Push> pushes) {
        return new Connection.Listener() {
            @Override
            public void push(Connection connection, Push push) {
                pushes.add(push);
            }
        };
    }

    @Test
    void resp3PushesGoToTheListenerWhileCommandsRun() throws Exception {
        BlockingQueue<Push> pushes = new LinkedBlockingQueue<>();
        try (RespConnection conn = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", server.port).listener(pushesTo(pushes)));
                RespConnection admin = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", server.port))) {
            conn.subscribe("chan");
            assertEquals("PONG", conn.call("PING"), "a RESP3 subscriber keeps running commands");
            assertEquals(1L, admin.call("PUBLISH", "chan", "hello"));
            Push push = pushes.poll(2, TimeUnit.SECONDS);
            assertEquals("message", push.kind());
            assertEquals("hello", new String(push.payload(), StandardCharsets.UTF_8));
            assertNull(conn.call("GET", "nothing-here"));
        }
    }

    @Test
    void resp2SubscriberMessagesArePushesToo() throws Exception {
        BlockingQueue<Push> pushes = new LinkedBlockingQueue<>();
        try (RespConnection conn = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", server.port)
                .protocol(2).listener(pushesTo(pushes))); RespConnection admin = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", server.port))) {
            assertEquals(2, conn.protocol());
            assertTrue(conn.clientId() > 0);
            conn.subscribe("chan2");
            Object pong = conn.call("PING");
            assertInstanceOf(List.class, pong, "a RESP2 subscriber's PING answers [pong, '']");
            assertEquals("pong", RespConnection.text(((List<?>) pong).get(0)));
            admin.call("PUBLISH", "chan2", "m1");
            Push push = pushes.poll(2, TimeUnit.SECONDS);
            assertEquals("m1", new String(push.payload(), StandardCharsets.UTF_8));
        }
    }

    @Test
    void authenticationAndDatabase() throws Exception {
        try (RedisServer secured = RedisServer.start("--requirepass", "s3cret")) {
            assertThrows(RespServerException.class, () -> RespConnection.open(
                    new RespConnection.Settings().address("127.0.0.1", secured.port).auth(null, "wrong")));
            try (RespConnection db3 = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", secured.port)
                    .auth(null, "s3cret").db(3)); AdminConnection db0 = secured.admin("s3cret")) {
                assertEquals("OK", db3.call("SET", "where", "three"));
                assertNull(db0.call("GET", "where"));
                assertEquals(0L, db0.call("EXISTS", "where"));
                assertEquals(1L, db3.call("EXISTS", "where"));
            }
            try (AdminConnection admin = secured.admin("s3cret")) {
                assertEquals("OK", admin.call("ACL", "SETUSER", "alice", "on", ">pw", "~*", "&*", "+@all"));
            }
            try (RespConnection alice = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", secured.port)
                    .auth("alice", "pw").protocol(2))) {
                assertEquals("alice", RespConnection.text(alice.call("ACL", "WHOAMI")));
            }
        }
    }

    @Test
    void aServerWithoutHelloIsSpokenToInResp2() throws Exception {
        try (RedisServer old = RedisServer.start("--rename-command", "HELLO", "");
                RespConnection conn = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", old.port))) {
            assertEquals(2, conn.protocol());
            assertEquals("OK", conn.call("SET", "k", "v"));
            assertInstanceOf(List.class, conn.call("CONFIG", "GET", "port"), "RESP2 replies a flat array for a map");
        }
    }

    @Test
    void aConnectionKilledByTheServerFailsItsCalls() throws Exception {
        CountDownLatch closed = new CountDownLatch(1);
        RespConnection conn = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", server.port)
                .clientName("victim").listener(new Connection.Listener() {
                    @Override
                    public void closed(Connection connection, IOException cause) {
                        closed.countDown();
                    }
                }));
        try (RespConnection admin = RespConnection.open(new RespConnection.Settings().address("127.0.0.1", server.port))) {
            assertEquals(1L, admin.call("CLIENT", "KILL", "ID", conn.clientId()));
        }
        assertTrue(closed.await(2, TimeUnit.SECONDS));
        assertThrows(IOException.class, () -> conn.call("PING"));
    }
}
