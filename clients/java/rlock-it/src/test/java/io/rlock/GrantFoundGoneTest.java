package io.rlock;

import static io.rlock.testing.Admin.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;
import io.rlock.testing.Proxy;
import io.rlock.testing.TestClients;

/**
 * A grant told by message and read only after its lease ended (CONTRACT.md C4.2, issue 47's
 * finding 10): the waiter's replies are held back by a proxy (a paused process, a late
 * subscriber) while the server grants it the lock under a fixed 500 ms lease, the lease ends
 * unconfirmed, and another client takes the lock. Read late, the grant must be confirmed with
 * RENEW, which answers 0: the waiter must not report the lock held beside the other holder
 * (it did, with confirmation off or with no replica to wait for: the RENEW was skipped); it asks
 * again and gets the lock once the other releases it.
 */
class GrantFoundGoneTest extends OneServer {
    private static Map<String, Object> info(String name) {
        return Admin.info(admin, "RLOCK.INFO", name);
    }

    /** The fencing token of the holding of {@code name}, 0 when free. */
    private static long token(String name) {
        Map<String, Object> info = info(name);
        return info == null ? 0 : (Long) info.get("token");
    }

    @ParameterizedTest(name = "confirm off: {0}")
    @ValueSource(booleans = {false, true})
    void aLeaseGrantReadAfterItsLeaseEndedIsNotReportedHeld(boolean confirmOff) throws Exception {
        String name = "gone:lease:" + (confirmOff ? "off" : "auto");
        try (Proxy proxy = new Proxy(server.port);
                RLockClient late = TestClients.create(proxy.uri());
                RLockClient first = TestClients.create(server.uri());
                RLockClient second = TestClients.create(server.uri())) {
            RLockClient waiterClient = confirmOff ? late.withConfirm(Confirm.off()) : late;
            RLock holder = first.getLock(name);
            assertTrue(holder.tryLock(0, 30, TimeUnit.SECONDS));
            long held = holder.getToken();
            RLock waiting = waiterClient.getLock(name);
            CompletableFuture<Long> acquired = Async.call(() -> waiting.tryLock(30_000, 500, TimeUnit.MILLISECONDS) ? waiting.getToken() : -1L);
            eventually(10_000, "the waiter to queue", () -> Admin.waiters(admin, name) == 1);

            proxy.holdReplies();
            holder.unlock();
            eventually(5_000, "the grant to the waiter", () -> token(name) > held);
            eventually(10_000, "the unread grant's lease to end", () -> info(name) == null);
            RLock other = second.getLock(name);
            assertTrue(other.tryLock(0, 30, TimeUnit.SECONDS));
            long othersToken = other.getToken();
            proxy.passReplies();

            // Read now, the grant is found gone: not held, it queues again behind the other.
            eventually(10_000, "the waiter to ask again (or to answer)", () -> acquired.isDone() || Admin.waiters(admin, name) == 1);
            assertFalse(acquired.isDone(), () -> "the waiter answered " + acquired.join() + " while the other holds the lock");
            assertEquals(othersToken, token(name), "the other holding is left alone");
            other.unlock();
            assertTrue(acquired.get(30, TimeUnit.SECONDS) > othersToken, "granted after the other, with a larger token");
        }
    }
}
