package io.rlock;

import io.rlock.internal.*;

/**
 * Redisson's {@code NameMapper}: every name given to the client ({@code getLock(name)} and the
 * other getters) becomes its key through {@link #map}, and every name the client reports back
 * (a handle's {@code getName()}, a {@link LostLock}, an object listener) goes through
 * {@link #unmap}. Set it with {@link RLockOptions#nameMapper(NameMapper)}; {@code RLocks.of(redisson)}
 * takes Redisson's own ({@code Config.useSingleServer().setNameMapper(...)} and the others).
 */
public interface NameMapper {
    String map(String name);

    String unmap(String name);

    /** The names as given (the default). */
    static NameMapper direct() {
        return Direct.INSTANCE;
    }

    /** {@link #direct()}: a singleton so that a client can tell "no mapper" apart. */
    final class Direct implements NameMapper {
        static final Direct INSTANCE = new Direct();

        private Direct() {
        }

        @Override
        public String map(String name) {
            return name;
        }

        @Override
        public String unmap(String name) {
            return name;
        }
    }
}
