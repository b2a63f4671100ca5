package org.redisson;

import rlock.RLockClient;

/** Redisson's test interface, over our client. */
public interface RedissonRunnable {

    void run(RLockClient redisson);

}
