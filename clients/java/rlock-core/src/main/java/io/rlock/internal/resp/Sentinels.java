package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import io.rlock.internal.transport.Connection;

import io.rlock.RLockOptions;

import java.io.IOException;
import java.util.List;

/**
 * Sentinel discovery: which server the sentinels name as the primary of the master name
 * ({@code SENTINEL get-master-addr-by-name}), asking them in turn on short-lived connections:
 * with the data nodes' TLS settings, and with the sentinels' own credentials when given
 * ({@link RLockOptions#sentinelAuth}), never the data nodes' (a sentinel without a password
 * refuses {@code AUTH}).
 */
public final class Sentinels {
    final String masterName;
    private final List<String> addresses;
    private final RespConnection.Settings settings;
    /** Why the last sentinel asked gave no answer (for the error when none does). */
    private volatile String lastFailure = "";

    /** {@code nodes}: the data nodes' settings, whose TLS the sentinels share. */
    public Sentinels(String masterName, List<String> addresses, RespConnection.Settings nodes, String user, String password) {
        this.masterName = masterName;
        this.addresses = addresses;
        this.settings = nodes.copy().auth(user, password).db(0).protocol(2)
                .connectTimeout(java.time.Duration.ofSeconds(2)).responseTimeout(java.time.Duration.ofSeconds(2))
                .listener(new Connection.Listener() {
                });
    }

    /** {host, port} of the primary the first sentinel that answers names, or null when none answers. */
    String[] primary() {
        for (String address : addresses) {
            int colon = address.lastIndexOf(':');
            RespConnection.Settings one = settings.copy().address(address.substring(0, colon),
                    Integer.parseInt(address.substring(colon + 1)));
            try (RespConnection conn = RespConnection.open(one)) {
                Object reply = conn.call("SENTINEL", "get-master-addr-by-name", masterName);
                if (reply instanceof List<?> list && list.size() == 2) {
                    return new String[] {RespConnection.text(list.get(0)), RespConnection.text(list.get(1))};
                }
                lastFailure = address + " answered " + (reply == null ? "that it knows no " + masterName : String.valueOf(reply));
            } catch (IOException | RuntimeException e) {
                lastFailure = address + ": " + e.getMessage(); // the next sentinel
            }
        }
        return null;
    }

    /** The last sentinel's failure to answer, for errors. */
    String lastFailure() {
        return lastFailure;
    }

    @Override
    public String toString() {
        return "sentinels " + addresses + " of " + masterName;
    }
}
