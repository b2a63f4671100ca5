<?php

declare(strict_types=1);

namespace Rlock\Connection;

/**
 * A phpredis `Redis` (one server) or `RedisCluster` (the node of one key: every command is sent
 * with that key as its route, `WAIT` and `ROLE` included, so they run on the key's node).
 *
 * phpredis reports an error reply as `false` plus `getLastError()`, and nil as `false` too: the
 * last error is cleared before each call and read after it to tell them apart.
 */
final class PhpRedisConnection implements Connection
{
    /**
     * @param ?\Closure $locate where to reconnect, [host, port] (Sentinel: the primary it names now);
     *                         null: where the connection was
     */
    public function __construct(private \Redis|\RedisCluster $redis, private ?string $routeKey = null, private ?\Closure $locate = null)
    {
        if ($redis instanceof \RedisCluster && $routeKey === null) {
            throw new \Rlock\Exception\InvalidArgumentException('a RedisCluster connection needs the key whose node it serves');
        }
    }

    public function call(array $args): mixed
    {
        $this->redis->clearLastError();
        try {
            $reply = $this->routeKey === null
                ? $this->redis->rawCommand(...$args)
                : $this->redis->rawCommand($this->routeKey, ...$args);
        } catch (\RedisClusterException $e) {
            throw $this->translate($e);
        } catch (\RedisException $e) {
            throw $this->translate($e);
        }
        if ($reply === false && ($error = $this->redis->getLastError()) !== null) {
            $this->redis->clearLastError();
            throw new ServerError($error);
        }
        // phpredis answers a +OK status as true; the other helpers (and Predis) give "OK".
        return $reply === false ? null : ($reply === true ? 'OK' : $reply);
    }

    public function pipeline(array $commands): array
    {
        if ($this->redis instanceof \RedisCluster || count($commands) === 1) {
            // RedisCluster has no pipeline: the same node connection, one command after another,
            // which is what WAIT needs (it counts this connection's last write).
            return array_map(function (array $command) {
                try {
                    return $this->call($command);
                } catch (ServerError $e) {
                    return $e;
                }
            }, $commands);
        }
        $this->redis->clearLastError();
        try {
            $pipe = $this->redis->multi(\Redis::PIPELINE);
            foreach ($commands as $command) {
                $pipe->rawCommand(...$command);
            }
            $replies = $pipe->exec();
        } catch (\RedisException $e) {
            // phpredis throws for some error replies inside a pipeline; the first command's
            // (the others are WAIT/WAITAOF, which do not fail on valid arguments).
            $error = $this->translate($e);
            if ($error instanceof ConnectionLost) {
                throw $error;
            }
            return [$error, ...array_fill(0, count($commands) - 1, null)];
        }
        $error = $this->redis->getLastError();
        $this->redis->clearLastError();
        if (!is_array($replies)) {
            throw new ConnectionLost('the pipeline got no replies from ' . $this->describe() . ($error ? ": $error" : ''));
        }
        // Only WAIT/WAITAOF/PING follow the first command here, and they do not fail on valid
        // arguments: a `false` with an error pending is the first command's error.
        foreach ($replies as $i => $reply) {
            if ($reply === false) {
                $replies[$i] = ($error !== null && $i === 0) ? new ServerError($error) : null;
            }
        }
        return $replies;
    }

    public function withReadTimeout(?float $seconds, callable $body): mixed
    {
        if ($this->redis instanceof \RedisCluster) {
            // RedisCluster keeps the read timeout its node connections were made with: a wait
            // that could outlast it would be cut by the client, so it is refused before it is sent.
            $limit = (float) $this->redis->getOption(\Redis::OPT_READ_TIMEOUT);
            if ($limit > 0 && ($seconds === null || $seconds + 1.0 > $limit)) {
                throw new \Rlock\Exception\InvalidArgumentException(sprintf(
                    'a wait of %s needs a longer read timeout than this RedisCluster has (%s s), and phpredis cannot lift it '
                    . 'for one call: make the RedisCluster with read_timeout 0 (no limit) or longer than the longest wait',
                    $seconds === null ? 'no limit' : "$seconds s",
                    $limit
                ));
            }
            return $body();
        }
        // 0 is phpredis's "not set" (default_socket_timeout applies), but setting 0 would mean no wait at all.
        $before = (float) $this->redis->getOption(\Redis::OPT_READ_TIMEOUT) ?: (float) ini_get('default_socket_timeout');
        $this->redis->setOption(\Redis::OPT_READ_TIMEOUT, $seconds === null ? -1 : $seconds + self::REPLY_MARGIN_S);
        try {
            return $body();
        } finally {
            $this->redis->setOption(\Redis::OPT_READ_TIMEOUT, $before);
        }
    }

    public function reconnect(): void
    {
        if ($this->redis instanceof \RedisCluster) {
            return; // RedisCluster reconnects to the slot's node by itself on the next command
        }
        [$host, $port] = $this->locate !== null ? ($this->locate)() : [$this->redis->getHost(), $this->redis->getPort()];
        $timeout = $this->redis->getTimeout();
        $auth = $this->redis->getAuth();
        $db = $this->redis->getDbNum();
        try {
            $this->redis->close();
        } catch (\RedisException) {
        }
        try {
            $this->redis->connect($host, $port, $timeout ?: 0.0);
            if ($auth !== null && $auth !== false) {
                $this->redis->auth($auth);
            }
            if ($db) {
                $this->redis->select($db);
            }
        } catch (\RedisException $e) {
            throw new ConnectionLost("could not reconnect to {$this->describe()}: {$e->getMessage()}", 0, $e);
        }
    }

    public function describe(): string
    {
        if ($this->redis instanceof \RedisCluster) {
            return "the cluster node of '{$this->routeKey}'";
        }
        return $this->redis->getHost() . ':' . $this->redis->getPort();
    }

    private function translate(\Exception $e): \RuntimeException
    {
        $message = $e->getMessage();
        // phpredis throws for some error replies (e.g. a cluster node's, MOVED it could not follow)
        // and for a broken socket; only the latter is a lost connection.
        if (preg_match('/socket|connection|went away|read error|timed out|Can\'t communicate|Unable to send/i', $message)) {
            return new ConnectionLost("connection to {$this->describe()} lost: $message", 0, $e);
        }
        return new ServerError($message, 0, $e);
    }
}
