/**
 * rlock's Redisson-shaped locks: the API package is exported; the engine stays inside, open
 * only to the transport modules that plug a client library's connections into it.
 */
module io.rlock {
    exports io.rlock;
    exports io.rlock.internal to io.rlock.lettuce, io.rlock.redisson;
    exports io.rlock.internal.resp to io.rlock.lettuce, io.rlock.redisson;
    exports io.rlock.internal.transport to io.rlock.lettuce, io.rlock.redisson;
}
