package io.rlock.fleet;

import io.rlock.RLockClient;
import java.util.concurrent.TimeUnit;
import org.redisson.api.RedissonClient;

/**
 * A primitive both libraries offer on one name, each side's {@link Gate} to it, and how a waiter
 * of each side shows in the server (so that a test releases only once the other side waits).
 */
enum Primitive {
    LOCK(1) {
        @Override
        Gate redisson(RedissonClient redisson, String name) {
            return lock(redisson.getLock(name));
        }

        @Override
        Gate rlock(RLockClient rlock, String name) {
            return lock(rlock.getLock(name));
        }
    },
    FAIR_LOCK(1) {
        @Override
        Gate redisson(RedissonClient redisson, String name) {
            return lock(redisson.getFairLock(name));
        }

        @Override
        Gate rlock(RLockClient rlock, String name) {
            return lock(rlock.getFairLock(name));
        }
    },
    WRITE_LOCK(1) {
        @Override
        Gate redisson(RedissonClient redisson, String name) {
            return lock(redisson.getReadWriteLock(name).writeLock());
        }

        @Override
        Gate rlock(RLockClient rlock, String name) {
            return lock(rlock.getReadWriteLock(name).writeLock());
        }
    },
    /** A reader on the holding side, a writer on the waiting side (and the reverse). */
    READ_THEN_WRITE(1) {
        @Override
        Gate redisson(RedissonClient redisson, String name) {
            return lock(redisson.getReadWriteLock(name).readLock());
        }

        @Override
        Gate rlock(RLockClient rlock, String name) {
            return lock(rlock.getReadWriteLock(name).readLock());
        }

        @Override
        Gate redissonWaiter(RedissonClient redisson, String name) {
            return WRITE_LOCK.redisson(redisson, name);
        }

        @Override
        Gate rlockWaiter(RLockClient rlock, String name) {
            return WRITE_LOCK.rlock(rlock, name);
        }
    },
    SEMAPHORE(2) {
        @Override
        Gate redisson(RedissonClient redisson, String name) {
            org.redisson.api.RSemaphore semaphore = redisson.getSemaphore(name);
            semaphore.trySetPermits(permits);
            return new Gate() {
                @Override
                public boolean enter(long waitMs) throws InterruptedException {
                    return semaphore.tryAcquire(java.time.Duration.ofMillis(waitMs));
                }

                @Override
                public void leave() {
                    semaphore.release();
                }
            };
        }

        @Override
        Gate rlock(RLockClient rlock, String name) {
            io.rlock.RSemaphore semaphore = rlock.getSemaphore(name);
            semaphore.trySetPermits(permits);
            return new Gate() {
                @Override
                public boolean enter(long waitMs) throws InterruptedException {
                    return semaphore.tryAcquire(1, waitMs, TimeUnit.MILLISECONDS);
                }

                @Override
                public void leave() {
                    semaphore.release();
                }
            };
        }
    };

    /** How many may be inside at once. */
    final int permits;

    Primitive(int permits) {
        this.permits = permits;
    }

    abstract Gate redisson(RedissonClient redisson, String name);

    abstract Gate rlock(RLockClient rlock, String name);

    /** The gate a waiter of Redisson's side uses (the same as a holder's but for {@link #READ_THEN_WRITE}). */
    Gate redissonWaiter(RedissonClient redisson, String name) {
        return redisson(redisson, name);
    }

    Gate rlockWaiter(RLockClient rlock, String name) {
        return rlock(rlock, name);
    }

    static Gate lock(java.util.concurrent.locks.Lock lock) {
        return new Gate() {
            @Override
            public boolean enter(long waitMs) throws InterruptedException {
                return lock.tryLock(waitMs, TimeUnit.MILLISECONDS);
            }

            @Override
            public void leave() {
                lock.unlock();
            }
        };
    }
}
