package rlock;

import java.io.IOException;
import java.util.List;
import rlock.resp.RespConnection;

/**
 * Sentinel discovery: which server the sentinels name as the primary of the master name
 * ({@code SENTINEL get-master-addr-by-name}), asking them in turn on short-lived connections.
 */
final class Sentinels {
    final String masterName;
    private final List<String> addresses;
    private final RespConnection.Settings settings;

    Sentinels(String masterName, List<String> addresses) {
        this.masterName = masterName;
        this.addresses = addresses;
        // The sentinels are asked without the data nodes' credentials, database or TLS.
        this.settings = new RespConnection.Settings().connectTimeout(java.time.Duration.ofSeconds(2))
                .responseTimeout(java.time.Duration.ofSeconds(2)).protocol(2);
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
            } catch (IOException | RuntimeException e) {
                // the next sentinel
            }
        }
        return null;
    }

    @Override
    public String toString() {
        return "sentinels " + addresses + " of " + masterName;
    }
}
