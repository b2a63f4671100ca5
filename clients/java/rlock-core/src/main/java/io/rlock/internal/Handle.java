package io.rlock.internal;

import io.rlock.*;

/**
 * The base of the handles {@link RLockClient} gives out: each is its client's {@link Engine}
 * and a name, and nothing else (a handle keeps no state of its own, the server does).
 */
public abstract class Handle {
    public final Engine engine;
    /** The key: the user's name through the client's {@link NameMapper}. */
    public final String name;

    Handle(Engine engine, String name) {
        this.engine = engine;
        this.name = name;
    }

    public String getName() {
        return engine.nameOf(name);
    }

    /** Removes the key (Redisson's {@code RObject.delete()}, for the types that declare it): true when it existed. */
    public boolean delete() {
        return Replies.number(engine.write(name, "DEL", name), 0) > 0;
    }

    /** Whether the key exists (Redisson's {@code RObject.isExists()}, for the types that declare it). */
    public boolean isExists() {
        return Replies.number(engine.call(name, "EXISTS", name), 0) > 0;
    }
}
