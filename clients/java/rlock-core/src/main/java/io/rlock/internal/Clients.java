package io.rlock.internal;

import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import io.rlock.internal.resp.RedisUri;
import io.rlock.internal.transport.Connector;

/**
 * How a transport module (rlock-lettuce, ...) makes an {@link RLockClient} whose engine opens
 * its connections through the user's client: RLockClient registers its constructor here when
 * it is initialised, since its constructor is not public (the engine is no part of the API).
 */
public final class Clients {
    /** Makes a client of an engine over {@code connector}. */
    public interface Factory {
        RLockClient create(RedisUri uri, RLockOptions options, Connector connector);
    }

    private static volatile Factory factory;

    private Clients() {
    }

    /** Called once, by RLockClient's static initialiser. */
    public static void register(Factory made) {
        factory = made;
    }

    /** An RLockClient for {@code uri} whose connections {@code connector} opens. */
    public static RLockClient create(RedisUri uri, RLockOptions options, Connector connector) {
        if (factory == null) {
            try {
                Class.forName(RLockClient.class.getName(), true, RLockClient.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
        }
        return factory.create(uri, options, connector);
    }
}
