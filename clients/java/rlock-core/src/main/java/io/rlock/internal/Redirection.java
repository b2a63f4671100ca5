package io.rlock.internal;

import io.rlock.internal.transport.NodeAddress;
import io.rlock.internal.transport.RespError;

/**
 * The address a Redis Cluster redirection names ({@code MOVED <slot> <host>:<port>},
 * {@code ASK <slot> <host>:<port>}; an empty host is the replying node's). Only the address:
 * which node serves a slot is the transport's to say.
 */
final class Redirection {
    private Redirection() {
    }

    /** The node {@code error} redirects to, or null when it is no well-formed redirection. */
    static NodeAddress target(RespError error, NodeAddress from) {
        String[] parts = error.message().split(" ");
        if (parts.length != 3 || !parts[0].matches("MOVED|ASK")) {
            return null;
        }
        int colon = parts[2].lastIndexOf(':');
        if (colon < 0) {
            return null;
        }
        String host = parts[2].substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        try {
            return new NodeAddress(host.isEmpty() ? from.host() : host, Integer.parseInt(parts[2].substring(colon + 1)));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }
}
