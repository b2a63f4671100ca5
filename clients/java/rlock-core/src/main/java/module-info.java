/** rlock's Redisson-shaped locks: only the API package is exported; the engine stays inside. */
module io.rlock {
    exports io.rlock;
}
