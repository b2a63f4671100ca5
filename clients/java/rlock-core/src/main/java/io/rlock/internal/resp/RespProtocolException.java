package io.rlock.internal.resp;

import io.rlock.internal.transport.Push;
import io.rlock.internal.transport.RespError;
import io.rlock.internal.transport.RespServerException;
import java.io.IOException;

/** The bytes from the server are not RESP: the connection cannot be used any more. */
public final class RespProtocolException extends IOException {
    public RespProtocolException(String message) {
        super(message);
    }
}
