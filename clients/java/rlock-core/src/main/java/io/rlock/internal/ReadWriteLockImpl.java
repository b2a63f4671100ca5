package io.rlock.internal;

import io.rlock.*;

public final class ReadWriteLockImpl implements RReadWriteLock {
    private final Engine engine;
    private final String name;
    private final RLock read;
    private final RLock write;

    public ReadWriteLockImpl(Engine engine, String name) {
        this.engine = engine;
        this.name = name;
        this.read = new LockImpl(engine, name, Family.READ);
        this.write = new LockImpl(engine, name, Family.WRITE);
    }

    @Override
    public String getName() {
        return engine.nameOf(name);
    }

    @Override
    public RLock readLock() {
        return read;
    }

    @Override
    public RLock writeLock() {
        return write;
    }
}
