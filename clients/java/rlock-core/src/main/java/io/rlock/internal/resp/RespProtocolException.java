package io.rlock.internal.resp;

import java.io.IOException;

/** The bytes from the server are not RESP: the connection cannot be used any more. */
public final class RespProtocolException extends IOException {
    public RespProtocolException(String message) {
        super(message);
    }
}
