package io.rlock.redisson;

import io.rlock.internal.transport.RespError;
import org.redisson.client.RedisAskException;
import org.redisson.client.RedisConnectionException;
import org.redisson.client.RedisException;
import org.redisson.client.RedisMovedException;
import org.redisson.client.RedisOutOfMemoryException;
import org.redisson.client.RedisTimeoutException;
import org.redisson.misc.RedisURI;

/**
 * The server's error reply behind a Redisson exception, as the engine reads error replies
 * ({@code CODE message}): Redisson's decoder turns {@code -MOVED}, {@code -ASK}, {@code -OOM}
 * into their own exceptions and appends ". channel: ..." to every other one's text.
 */
final class ServerErrors {
    /** What Redisson's {@code CommandDecoder} appends to a server's error text. */
    private static final String APPENDED = ". channel: ";

    private ServerErrors() {
    }

    /** The error reply, or null when {@code failure} is no reply of the server's (a broken or timed-out connection). */
    static RespError reply(Throwable failure) {
        if (failure instanceof RedisMovedException moved) {
            return new RespError("MOVED " + moved.getSlot() + " " + address(moved.getUrl()));
        }
        if (failure instanceof RedisAskException ask) {
            return new RespError("ASK " + ask.getSlot() + " " + address(ask.getUrl()));
        }
        if (!(failure instanceof RedisException) || failure instanceof RedisConnectionException
                || failure instanceof RedisTimeoutException || failure.getMessage() == null) {
            return null;
        }
        String text = failure.getMessage();
        int appended = text.indexOf(APPENDED);
        if (appended < 0) {
            return null;
        }
        text = text.substring(0, appended);
        return new RespError(failure instanceof RedisOutOfMemoryException ? "OOM " + text : text);
    }

    private static String address(RedisURI uri) {
        return uri.getHost() + ":" + uri.getPort();
    }
}
