package io.rlock.internal;

import io.rlock.*;

/** {@link RKeys}: one command on each primary the client knows now (as Redisson's, all masters). */
public final class KeysImpl implements RKeys {
    private final Engine engine;

    public KeysImpl(Engine engine) {
        this.engine = engine;
    }

    @Override
    public long count() {
        long keys = 0;
        for (Node primary : engine.router().primaries()) {
            keys += Replies.number(Replies.check(primary.call(false, "DBSIZE")), 0);
        }
        return keys;
    }

    @Override
    public void flushall() {
        for (Node primary : engine.router().primaries()) {
            Replies.check(primary.call(false, "FLUSHALL"));
        }
    }
}
