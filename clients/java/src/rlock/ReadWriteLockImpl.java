package rlock;

final class ReadWriteLockImpl implements RReadWriteLock {
    private final String name;
    private final RLock read;
    private final RLock write;

    ReadWriteLockImpl(Engine engine, String name) {
        this.name = name;
        this.read = new LockImpl(engine, name, Family.READ);
        this.write = new LockImpl(engine, name, Family.WRITE);
    }

    @Override
    public String getName() {
        return name;
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
