/**
 * rlock's Redisson-shaped locks: the API package is exported; the engine stays inside, open
 * only to the transport modules that plug a client library's connections into it.
 */
module io.rlock {
    exports io.rlock;
    // The transport modules (rlock-lettuce, rlock-jedis, rlock-redisson, rlock-spring-data) plug a client
    // library into the engine through io.rlock.internal.transport (the SPI) and Clients.
    exports io.rlock.internal to io.rlock.lettuce, io.rlock.jedis, io.rlock.redisson, io.rlock.spring.data;
    exports io.rlock.internal.transport to io.rlock.lettuce, io.rlock.jedis, io.rlock.redisson, io.rlock.spring.data;
}
