package io.rlock.internal;

import io.rlock.RLockClient;
import io.rlock.RLockOptions;
import io.rlock.internal.transport.Transport;

/**
 * How a transport module (rlock-lettuce, ...) makes an {@link RLockClient} whose engine works
 * through the user's client: RLockClient registers its constructor here when it is
 * initialised, since its constructor is not public (the engine is no part of the API).
 */
public final class Clients {
    /** Makes a client of an engine over {@code transport}. */
    public interface Factory {
        RLockClient create(RLockOptions options, Transport transport);
    }

    private static volatile Factory factory;

    private Clients() {
    }

    /** Called once, by RLockClient's static initialiser. */
    public static void register(Factory made) {
        factory = made;
    }

    /**
     * An RLockClient over {@code transport}: it connects its first session before it returns, and
     * closing it closes the transport ({@link Transport#close()}), never the user's client.
     *
     * @throws io.rlock.RLockException when the first session cannot be opened (the transport is closed then)
     */
    public static RLockClient create(RLockOptions options, Transport transport) {
        if (factory == null) {
            try {
                Class.forName(RLockClient.class.getName(), true, RLockClient.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
        }
        return factory.create(options, transport);
    }
}
