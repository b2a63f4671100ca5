<?php

declare(strict_types=1);

namespace Rlock\Connection;

/**
 * One connection to the node that serves a key, as rlock needs it: raw commands, a pipeline on the
 * same connection (a write and its `WAIT`), and a read timeout that a blocked wait can lift.
 * Adapters exist for phpredis (`Redis`, `RedisCluster`) and Predis; nothing here speaks RESP.
 */
interface Connection
{
    /**
     * Runs one command. Returns the reply (null for nil) or throws ServerError for an error reply;
     * a broken connection throws ConnectionLost.
     */
    public function call(array $args): mixed;

    /**
     * Runs the commands in one round trip on this connection. Each reply, or a ServerError object
     * in place of an error reply.
     */
    public function pipeline(array $commands): array;

    /** Seconds a reply may take before the connection is given up; null: no limit (a blocked wait). */
    public function withReadTimeout(?float $seconds, callable $body): mixed;

    /** Opens the connection again after ConnectionLost (the server then knows it as a new client). */
    public function reconnect(): void;

    /** host:port, for messages. */
    public function describe(): string;
}
