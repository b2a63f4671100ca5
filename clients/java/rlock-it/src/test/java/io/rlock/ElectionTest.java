package io.rlock;

import io.rlock.testing.TestClients;
import io.rlock.internal.*;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.rlock.testing.Admin.eventually;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import io.rlock.testing.Admin;
import io.rlock.testing.Async;

/** Leader election: campaign in FIFO order, leader(), observe() by keyspace events, resign(), onLost. */
class ElectionTest extends OneServer {
    final List<RLockClient> clients = new ArrayList<>();
    final BlockingQueue<Seen> seen = new LinkedBlockingQueue<>();
    String name;
    String key;

    /** A leader (or null) told to an observer, and when (System.nanoTime()). */
    record Seen(Leader leader, long at) {
    }

    @BeforeEach
    void events(TestInfo test) {
        Admin.call(admin, "CONFIG", "SET", "notify-keyspace-events", "Kdgx");
        name = test.getTestMethod().orElseThrow().getName();
        key = name;
    }

    @AfterEach
    void closeClients() {
        clients.forEach(RLockClient::close);
    }

    private RLockClient connect() {
        RLockClient client = TestClients.create(server.uri());
        clients.add(client);
        return client;
    }

    private Election.Observation observe() {
        return connect().getElection(name, "observer").observe(leader -> seen.add(new Seen(leader, System.nanoTime())));
    }

    /** A campaign's term, and when it returned (System.nanoTime()). */
    record Elected(long term, long at) {
    }

    /** Campaigns on another thread, once {@code before} candidates wait already; returns when queued. */
    private CompletableFuture<Elected> campaignBehind(Election election, int before) throws InterruptedException {
        CompletableFuture<Elected> term = Async.call(() -> new Elected(election.campaign(), System.nanoTime()));
        eventually(PATIENCE_S * 1000, election.getCandidate() + " queues", () -> Admin.waiters(admin, key) == before + 1);
        return term;
    }

    /**
     * A handoff made by the server at the close or the kill, not by a lease running out, comes
     * well before a third of the watchdog lease (10 s of 30 s). The time measured is printed;
     * bounds of a second raced the clock on a loaded machine (issue 43, item 6), this one only
     * fails when the handoff waited for the lease.
     */
    static final long HANDOFF_BOUND_MS = new RLockOptions().watchdogLease().toMillis() / 3;

    /** How long a test waits for something that must happen (it returns as soon as it does). */
    static final long PATIENCE_S = 20;

    private Seen next() throws InterruptedException {
        Seen next = seen.poll(PATIENCE_S, TimeUnit.SECONDS);
        assertNotNull(next, "the observer was told nothing");
        return next;
    }

    private static long leaderCalls() {
        String stat = Admin.infoField(admin, "commandstats", "cmdstat_rlock.leader");
        return stat == null ? 0 : Long.parseLong(stat.replaceAll("^calls=(\\d+),.*$", "$1"));
    }

    @Test
    void closingTheLeadersClientMakesAFollowerLeaderAndObserversSeeItAtOnce() throws Exception {
        Election first = connect().getElection(name, "candidate-1");
        Election second = connect().getElection(name, "candidate-2");
        Election third = connect().getElection(name, "candidate-3");
        long term1 = first.campaign();
        CompletableFuture<Elected> term2 = campaignBehind(second, 0);
        CompletableFuture<Elected> term3 = campaignBehind(third, 1);
        assertEquals("candidate-1", third.leader().candidate(), "every candidate reads the leader");
        assertEquals(term1, third.leader().term());

        try (Election.Observation observation = observe()) {
            Leader now = next().leader();
            assertEquals("candidate-1", now.candidate());
            assertEquals(term1, now.term());
            long calls = leaderCalls();
            Thread.sleep(300);
            assertEquals(calls, leaderCalls(), "the observer sends nothing while nothing changes");
            assertTrue(seen.isEmpty(), "nothing changed: " + seen);

            long closed = System.nanoTime();
            clients.get(0).close();
            Elected led = term2.get(PATIENCE_S, TimeUnit.SECONDS);
            long elected = led.term();
            long electedMs = (led.at() - closed) / 1_000_000;
            Seen change = next();
            while (change.leader() == null) {
                change = next(); // the drop, seen before the handoff
            }
            long seenMs = (change.at() - closed) / 1_000_000;
            assertEquals("candidate-2", change.leader().candidate());
            assertEquals(elected, change.leader().term());
            assertTrue(elected > term1, "terms only grow");
            System.out.println("close to new leader " + electedMs + " ms, to the observer " + seenMs + " ms");
            assertTrue(seenMs < HANDOFF_BOUND_MS, "the observer saw the new leader " + seenMs + " ms after the close");
            assertTrue(electedMs < HANDOFF_BOUND_MS, "the follower led " + electedMs + " ms after the close");
            assertFalse(term3.isDone(), "the third candidate still waits");
        }
        assertTrue(second.resign());
        assertTrue(term3.get(PATIENCE_S, TimeUnit.SECONDS).term() > term1);
        assertTrue(third.isLeader());
    }

    @Test
    void killingTheLeadersProcessMakesAFollowerLeaderAndObserversSeeItAtOnce() throws Exception {
        Process leader = CrossJvmTest.child("lead", server.uri(), name, "candidate-1");
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(leader.getInputStream(), StandardCharsets.UTF_8));
            long term1 = Long.parseLong(CrossJvmTest.line(leader, out, "LEADER ").substring(7));
            CompletableFuture<Elected> term2 = campaignBehind(connect().getElection(name, "candidate-2"), 0);
            campaignBehind(connect().getElection(name, "candidate-3"), 1);
            List<Seen> observers = new ArrayList<>();
            try (Election.Observation one = observe(); Election.Observation two = observe()) {
                assertEquals(term1, next().leader().term());
                assertEquals(term1, next().leader().term());
                long killed = System.nanoTime();
                leader.destroyForcibly(); // SIGKILL
                Elected second = term2.get(PATIENCE_S, TimeUnit.SECONDS);
                long elected = second.term();
                long electedMs = (second.at() - killed) / 1_000_000;
                while (observers.size() < 2) {
                    Seen change = next();
                    if (change.leader() != null) {
                        observers.add(change);
                    }
                }
                System.out.println("kill -9 to new leader " + electedMs + " ms, to observers "
                        + observers.stream().map(c -> (c.at() - killed) / 1_000_000 + " ms").toList());
                for (Seen change : observers) {
                    assertEquals(new Leader("candidate-2", elected, change.leader().ttl()), change.leader());
                    long seenMs = (change.at() - killed) / 1_000_000;
                    assertTrue(seenMs < HANDOFF_BOUND_MS, "an observer saw the new leader " + seenMs + " ms after the kill");
                }
                assertTrue(electedMs < HANDOFF_BOUND_MS, "the follower led " + electedMs + " ms after the kill");
                assertTrue(leader.waitFor(5, TimeUnit.SECONDS));
                assertEquals(137, leader.exitValue(), "killed by SIGKILL");
            }
        } finally {
            leader.destroyForcibly();
        }
    }

    @Test
    void anObservationNeedsTheModulesKeyspaceEvents() throws Exception {
        Admin.call(admin, "CONFIG", "SET", "notify-keyspace-events", "Kgx");
        IllegalStateException off = assertThrows(IllegalStateException.class, this::observe);
        assertTrue(off.getMessage().contains("needs K and d"), off.getMessage());
        Admin.call(admin, "CONFIG", "SET", "notify-keyspace-events", "KA");
        try (Election.Observation observation = observe()) {
            assertNull(next().leader(), "nobody leads yet");
            long term = connect().getElection(name, "candidate-1").campaign();
            assertEquals(term, next().leader().term(), "A includes the module's class");
        }
    }

    @Test
    void aForcedEndIsLostAResignIsNotAndADroppedObserverCatchesUp() throws Exception {
        RLockClient firstClient = connect();
        Election first = firstClient.getElection(name, "candidate-1");
        Election second = connect().getElection(name, "candidate-2");
        BlockingQueue<String> lost = new LinkedBlockingQueue<>();
        first.onLost(term -> lost.add("candidate-1:" + term));
        second.onLost(term -> lost.add("candidate-2:" + term));
        long term1 = first.campaign();
        assertEquals(term1, first.campaign(), "campaigning again while leading: the same term");
        CompletableFuture<Elected> term2 = campaignBehind(second, 0);

        try (Election.Observation observation = observe()) {
            assertEquals("candidate-1", next().leader().candidate());
            Election late = connect().getElection(name, "candidate-3");
            assertEquals(-1, late.campaign(50, TimeUnit.MILLISECONDS), "a campaign with a deadline gives up");
            assertEquals(1, Admin.waiters(admin, key), "and leaves the queue");
            Admin.call(admin, "RLOCK.FORCERELEASE", key);
            assertEquals("candidate-1:" + term1, lost.poll(PATIENCE_S, TimeUnit.SECONDS));
            long elected = term2.get(PATIENCE_S, TimeUnit.SECONDS).term();
            Seen change = next();
            while (change.leader() == null) {
                change = next();
            }
            assertEquals(new Leader("candidate-2", elected, change.leader().ttl()), change.leader());

            assertTrue(second.resign());
            assertFalse(second.resign(), "no longer leader");
            assertNull(next().leader(), "nobody leads after the resign");
            assertNull(second.leader());

            List<String> observers = Admin.clientsNamed(admin, "rlock-java-observe:" + clients.get(2).getId());
            assertEquals(1, observers.size(), observers.toString());
            String id = observers.get(0).replaceAll("^id=(\\d+) .*$", "$1");
            Admin.call(admin, "CLIENT", "KILL", "ID", id);
            long term3 = first.campaign();
            Seen back = next();
            assertEquals("candidate-1", back.leader().candidate(), "after the reconnect: the leader now");
            assertEquals(term3, back.leader().term());
            eventually(PATIENCE_S * 1000, "the observer subscribed again",
                    () -> Admin.clientsNamed(admin, "rlock-java-observe:" + clients.get(2).getId()).size() == 1);
        }
        assertTrue(first.resign());
        Thread.sleep(200);
        assertTrue(lost.isEmpty(), "resigns are not losses: " + lost);
    }
}
