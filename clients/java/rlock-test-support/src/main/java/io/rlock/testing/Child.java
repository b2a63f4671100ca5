package io.rlock.testing;

import io.rlock.RLock;
import io.rlock.RLockClient;

/**
 * The other JVM of the cross-process tests:
 * {@code hold <uri> <name>} takes the lock with the watchdog, prints {@code HELD <token>} and
 * sleeps; {@code lead <uri> <election> <candidate>} campaigns, prints {@code LEADER <term>} and
 * sleeps; {@code count <uri> <name> <n>} increments a counter (GET, then SET) n times under the
 * lock, counting overlaps, and prints {@code DONE <overlaps>}.
 */
public final class Child {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        RLockClient client = TestClients.create(args[1]);
        if (mode.equals("lead")) {
            System.out.println("LEADER " + client.getElection(args[2], args[3]).campaign());
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
        }
        RLock lock = client.getLock(args[2]);
        if (mode.equals("hold")) {
            lock.lock();
            System.out.println("HELD " + lock.getToken());
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
        }
        int n = Integer.parseInt(args[3]);
        String host = args[1].substring("redis://".length());
        int port = Integer.parseInt(host.substring(host.lastIndexOf(':') + 1));
        int overlaps = 0;
        try (AdminConnection data = AdminConnection.open(port, null)) {
            System.out.println("READY");
            System.out.flush();
            for (int i = 0; i < n; i++) {
                lock.lock();
                try {
                    if (!Long.valueOf(1).equals(data.call("INCR", args[2] + ":inside"))) {
                        overlaps++;
                    }
                    Object seen = data.call("GET", args[2] + ":counter");
                    long value = seen == null ? 0 : Long.parseLong(Admin.text(seen));
                    data.call("SET", args[2] + ":counter", value + 1);
                    data.call("DECR", args[2] + ":inside");
                } finally {
                    lock.unlock();
                }
            }
        }
        System.out.println("DONE " + overlaps);
        client.close();
        System.exit(0); // Lettuce's event loop threads would keep this JVM alive
    }
}
