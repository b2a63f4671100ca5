package io.rlock;

import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;

/**
 * Several permit ids in one call of {@link RPermitExpirableSemaphore} ({@code RSEM.ACQUIRE ...
 * EACH}, {@code RSEM.RELEASEMANY}), where Redisson's own tests (vendored) do not look: what the
 * server holds after each call, refusals that change nothing, the FIFO order of a request for n,
 * and ids held by the watchdog, re-bound after a reconnect.
 */
class PermitIdsTest extends TwoClients {
    PermitIdsTest() {
        super("ids");
    }

    /** The server's holders of the semaphore: owner to permits. */
    private Map<String, Long> holders() {
        Map<String, Object> info = Admin.info(admin, "RSEM.INFO", name);
        Map<String, Long> holders = new java.util.TreeMap<>();
        if (info != null) {
            for (Object holder : (List<?>) info.get("holders")) {
                Map<String, Object> fields = Admin.map(holder);
                holders.put(io.rlock.testing.Admin.text(fields.get("owner")), (Long) fields.get("permits"));
            }
        }
        return holders;
    }

    private long queued() {
        Map<String, Object> info = Admin.info(admin, "RSEM.INFO", name);
        return info == null ? 0 : ((List<?>) info.get("waiters")).size();
    }

    @Test
    void idsAreGrantedAllOrNoneAndGivenBackAsAList() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        semaphore.trySetPermits(5);
        List<String> ids = semaphore.tryAcquire(3);
        assertEquals(3, new HashSet<>(ids).size(), "distinct ids: " + ids);
        Map<String, Long> held = holders();
        assertEquals(new java.util.TreeSet<>(ids), held.keySet(), "each id is one holder on the server");
        assertTrue(held.values().stream().allMatch(permits -> permits == 1));
        assertEquals(List.of(), semaphore.tryAcquire(3), "3 do not fit in 2: none is taken");
        assertEquals(2, semaphore.availablePermits());

        List<String> withUnknown = new ArrayList<>(ids);
        withUnknown.add("no-such-id");
        assertThrows(RLockException.class, () -> semaphore.release(withUnknown));
        List<String> repeated = List.of(ids.get(0), ids.get(0));
        assertThrows(RLockException.class, () -> semaphore.release(repeated), "an id listed twice is not held the second time");
        assertEquals(held, holders(), "a refused release changes nothing");
        assertEquals(2, semaphore.availablePermits());

        assertEquals(0, semaphore.tryRelease(List.of(ids.get(0), "no-such-id")), "as Redisson's: all or none");
        assertEquals(held, holders(), "a tryRelease that answers 0 changes nothing");
        assertEquals(ids.size(), Async.call(() -> other.getPermitExpirableSemaphore(name).tryRelease(ids)).get(),
                "from any client");
        assertEquals(Map.of(), holders());
        assertEquals(5, semaphore.availablePermits());
    }

    @Test
    void badArgumentsAreRefusedAndTakeNothing() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        semaphore.trySetPermits(2);
        assertThrows(IllegalArgumentException.class, () -> semaphore.tryAcquire(-1));
        assertEquals(List.of(), semaphore.tryAcquire(0));
        assertThrows(IllegalArgumentException.class, () -> semaphore.tryRelease(List.of()));
        assertThrows(IllegalArgumentException.class, () -> semaphore.release((List<String>) null));
        assertEquals(2, semaphore.availablePermits());
        assertEquals(Map.of(), holders());
    }

    @Test
    void aRequestForSeveralWaitsInOrderAndIsNotPassed() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        semaphore.trySetPermits(3);
        List<String> mine = semaphore.acquire(3);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> three = Async.run(() -> {
            RPermitExpirableSemaphore theirs = other.getPermitExpirableSemaphore(name);
            List<String> ids = theirs.acquire(3);
            order.add("three:" + ids.size());
            theirs.release(ids);
        });
        eventually(5000, "the request for 3 queued", () -> queued() == 1);
        CompletableFuture<Void> one = Async.run(() -> {
            RPermitExpirableSemaphore theirs = other.getPermitExpirableSemaphore(name);
            List<String> ids = theirs.acquire(1);
            order.add("one:" + ids.size());
            theirs.release(ids);
        });
        eventually(5000, "the request for 1 queued", () -> queued() == 2);
        semaphore.release(mine.subList(0, 1));
        Thread.sleep(100);
        assertEquals(List.of(), order, "one free permit does not let the later request for 1 pass the request for 3");
        semaphore.release(mine.subList(1, 3));
        CompletableFuture.allOf(three, one).get(5, TimeUnit.SECONDS);
        assertEquals(List.of("three:3", "one:1"), order);
        assertEquals(3, semaphore.availablePermits());
    }

    @Test
    void anInterruptedRequestForSeveralLeavesTheQueue() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        semaphore.trySetPermits(1);
        Async.Interruptible waiter = Async.interruptible(() -> other.getPermitExpirableSemaphore(name).acquire(2));
        eventually(5000, "queued", () -> queued() == 1);
        waiter.interrupt();
        waiter.done().get(5, TimeUnit.SECONDS);
        assertEquals(0, queued(), "the request for 2 left the queue");
        semaphore.addPermits(1);
        assertEquals(2, semaphore.availablePermits(), "nobody took them");
        assertEquals(Map.of(), holders());
    }

    @Test
    void idsWithoutLeaseComeBackWhenTheirClientDies() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        semaphore.trySetPermits(3);
        List<String> theirs = Async.call(() -> other.getPermitExpirableSemaphore(name).acquire(3)).get();
        for (String id : theirs) {
            assertEquals(-1, semaphore.getLeaseTime(id), "held by the watchdog: " + id);
        }
        other.close();
        eventually(2000, "every id of the closed client is freed", () -> semaphore.availablePermits() == 3);
        assertEquals(Map.of(), holders());
    }

    @Test
    void leasedIdsEndEachAtItsLease() throws Exception {
        RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
        semaphore.trySetPermits(3);
        List<String> ids = semaphore.acquire(2, 10, TimeUnit.SECONDS);
        assertTrue(semaphore.updateLeaseTime(ids.get(0), 200, TimeUnit.MILLISECONDS), "one id's lease, alone");
        eventually(3000, "the shortened lease ended", () -> semaphore.availablePermits() == 2);
        assertEquals(Map.of(ids.get(1), 1L), holders());
        assertTrue(semaphore.getLeaseTime(ids.get(1)) > 5000);
    }

    @Test
    void watchdogIdsAreReboundAfterAReconnect() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "5000");
        try {
            RPermitExpirableSemaphore semaphore = client.getPermitExpirableSemaphore(name);
            semaphore.trySetPermits(4);
            List<String> ids = semaphore.acquire(3);
            List<String> lost = Collections.synchronizedList(new ArrayList<>());
            client.addLockLostListener(gone -> lost.add(gone.owner()));
            List<String> connections = Admin.clientsNamed(admin, "rlock-java:" + client.getId());
            assertEquals(1, connections.size(), "one connection: " + connections);
            String before = connections.get(0).split(" ")[0].substring("id=".length());
            Admin.call(admin, "CLIENT", "KILL", "ID", before);
            eventually(3000, "every id re-bound to the new connection", () -> {
                Map<String, Object> info = Admin.info(admin, "RSEM.INFO", name);
                List<?> holders = (List<?>) info.get("holders");
                return holders.size() == 3 && holders.stream().map(Admin::map)
                        .allMatch(h -> h.get("watchdog") != null && !String.valueOf(h.get("watchdog")).equals(before));
            });
            assertEquals(List.of(), lost);
            assertEquals(1, semaphore.availablePermits());
            semaphore.release(ids);
            assertEquals(4, semaphore.availablePermits());
        } finally {
            Admin.call(admin, "CONFIG", "SET", "rlock.watchdog-grace-ms", "0");
        }
    }
}
