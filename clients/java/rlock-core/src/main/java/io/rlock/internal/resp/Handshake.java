package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A new connection's handshake: {@code HELLO 3} (with {@code AUTH} and {@code SETNAME}), and
 * RESP2's {@code AUTH} and {@code CLIENT SETNAME} when the server refuses it; then
 * {@code SELECT} of the database. Its result: the protocol spoken and the connection's id.
 */
final class Handshake {
    record Result(int protocol, long clientId) {
    }

    private Handshake() {
    }

    static Result run(RespConnection conn, RespConnection.Settings s) throws IOException {
        int protocol = 2;
        long clientId = -1;
        if (s.protocol == 3) {
            List<Object> hello = new ArrayList<>(List.of("HELLO", "3"));
            if (s.password != null) {
                hello.addAll(List.of("AUTH", s.user != null ? s.user : "default", s.password));
            }
            if (s.clientName != null) {
                hello.addAll(List.of("SETNAME", s.clientName));
            }
            Object reply = conn.call(hello.toArray());
            if (reply instanceof Map) {
                protocol = 3;
                Object id = ((Map<?, ?>) reply).get("id");
                clientId = id instanceof Long ? (Long) id : -1;
            } else if (reply instanceof RespError && helloRefused((RespError) reply)) {
                protocol = 2;
            } else {
                throw new RespServerException("HELLO 3", reply);
            }
        }
        if (protocol == 2) {
            if (s.password != null) {
                Object reply = s.user != null ? conn.call("AUTH", s.user, s.password) : conn.call("AUTH", s.password);
                expectOk("AUTH", reply);
            }
            if (s.clientName != null) {
                expectOk("CLIENT SETNAME", conn.call("CLIENT", "SETNAME", s.clientName));
            }
            Object id = conn.call("CLIENT", "ID");
            clientId = id instanceof Long ? (Long) id : -1;
        }
        if (s.db != 0) {
            expectOk("SELECT", conn.call("SELECT", s.db));
        }
        return new Result(protocol, clientId);
    }

    /** A server without RESP3 (before Redis 6, or with HELLO renamed away). */
    private static boolean helloRefused(RespError error) {
        String message = error.message().toLowerCase();
        return error.code().equals("NOPROTO") || message.contains("unknown command");
    }

    private static void expectOk(String what, Object reply) throws RespServerException {
        if (!"OK".equals(reply)) {
            throw new RespServerException(what, reply);
        }
    }
}
