package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import io.rlock.testing.AdminConnection;
import io.rlock.testing.Admin;
import io.rlock.testing.Proxy;

/**
 * Calls that count permits without a holding to remember them: their reply lost, they are re-sent
 * with the same request id and count once, answering as the first call did (releasing a list of
 * permit ids, adding and setting permits, a counting semaphore's release, setting a latch).
 */
class RetryIdsTest extends OneServer {
    Proxy proxy;
    RLockClient client;
    String name;

    @BeforeEach
    void connect(TestInfo test) throws Exception {
        proxy = new Proxy(server.port);
        client = TestClients.create(proxy.uri());
        name = "retry:" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void disconnect() throws Exception {
        client.close();
        proxy.close();
    }

    /** Runs {@code call} with the reply to the next command containing {@code command} lost; checks it was re-sent. */
    private void withLostReply(String command, Runnable call) throws InterruptedException {
        int connections = proxy.accepted();
        proxy.dropReplyTo(command);
        call.run();
        assertTrue(proxy.awaitDrop(1000), "the reply to " + command + " was dropped");
        assertTrue(proxy.accepted() > connections, "the call was re-sent on a new connection");
    }

    private long rsemAvailable() {
        return (Long) Admin.info(admin, "RSEM.INFO", name).get("available");
    }

    private int rsemHolders() {
        Map<String, Object> info = Admin.info(admin, "RSEM.INFO", name);
        return ((List<?>) info.get("holders")).size();
    }

    @Test
    void aLostReplyToReleasingPermitIdsIsAnsweredAsTheFirstCall() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        boolean[] set = new boolean[1];
        withLostReply("RSEM.SETPERMITS", () -> set[0] = semaphore.trySetPermits(3));
        assertTrue(set[0], "the re-sent call answers 1 as the first did, not 0");
        List<String> ids = semaphore.acquire(2, 60, TimeUnit.SECONDS);
        assertEquals(2, rsemHolders());
        withLostReply("RSEM.RELEASEMANY", () -> semaphore.release(ids)); // ALL: no "not held"
        assertEquals(3, rsemAvailable());
        assertEquals(0, rsemHolders());

        List<String> again = semaphore.acquire(2, 60, TimeUnit.SECONDS);
        int[] released = new int[1];
        withLostReply("RSEM.RELEASEMANY", () -> released[0] = semaphore.tryRelease(again));
        assertEquals(2, released[0], "the re-sent tryRelease answers 2 as the first did, not 0");
        assertEquals(3, rsemAvailable());
    }

    @Test
    void aLostReplyToAddingPermitsAddsOnce() throws Exception {
        RPermitExpirableSemaphore expirable = client.getPermitExpirableSemaphore(name);
        assertTrue(expirable.trySetPermits(1));
        withLostReply("RSEM.ADDPERMITS", () -> expirable.addPermits(2));
        assertEquals(3, rsemAvailable());
        withLostReply("RSEM.ADDPERMITS", () -> expirable.addPermits(-1));
        assertEquals(2, rsemAvailable());

        String counting = name + ":counting";
        RSemaphore semaphore = client.getSemaphore(counting);
        boolean[] set = new boolean[1];
        withLostReply("RCSEM.SETPERMITS", () -> set[0] = semaphore.trySetPermits(1));
        assertTrue(set[0]);
        withLostReply("RCSEM.ADDPERMITS", () -> semaphore.addPermits(2));
        assertEquals(3L, Admin.call(admin, "RCSEM.AVAILABLE", counting));
        withLostReply("RCSEM.RELEASE", () -> semaphore.release(2));
        assertEquals(5L, Admin.call(admin, "RCSEM.AVAILABLE", counting));
        assertTrue(semaphore.tryAcquire(5));
        assertEquals(0L, Admin.call(admin, "RCSEM.AVAILABLE", counting));
    }

    @Test
    void aLostReplyToSettingALatchIsAnsweredAsTheFirstCallAndSetsOnce() throws Exception {
        RCountDownLatch latch = client.getCountDownLatch(name);
        boolean[] set = new boolean[1];
        withLostReply("RLATCH.SET", () -> set[0] = latch.trySetCount(3));
        assertTrue(set[0], "the re-sent call answers 1 as the first did, not 0");
        withLostReply("RLATCH.COUNTDOWN", latch::countDown);
        assertEquals(2L, Admin.call(admin, "RLATCH.COUNT", name));
        assertFalse(latch.trySetCount(9), "set already");
        assertEquals("2", Admin.text(Admin.call(admin, "GET", name)));
    }
}
