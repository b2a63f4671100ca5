package io.rlock.internal.transport;

/**
 * A Redis node as the user's client names it (host as the client reports it, port). The engine
 * keeps one {@code Node} (one session) per address; equal addresses are the same node.
 */
public record NodeAddress(String host, int port) {
    public NodeAddress {
        if (host == null || host.isEmpty() || port <= 0 || port > 65535) {
            throw new IllegalArgumentException("a node address needs a host and a port in 1..65535, not " + host + ":" + port);
        }
    }

    @Override
    public String toString() {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
}
