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

    /**
     * Runs `$body` with the read timeout lifted for a blocked wait whose reply the server sends
     * within `$seconds` (null: no limit); the adapter adds a margin for the round trip.
     */
    public function withReadTimeout(?float $seconds, callable $body): mixed;

    /** Seconds added to a wait's deadline for the reply's round trip on a loaded machine. */
    public const REPLY_MARGIN_S = 30.0;

    /** Opens the connection again after ConnectionLost (the server then knows it as a new client). */
    public function reconnect(): void;

    /** host:port, for messages. */
    public function describe(): string;
}
