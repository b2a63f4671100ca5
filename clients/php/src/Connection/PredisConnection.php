<?php

declare(strict_types=1);

namespace Rlock\Connection;

use Predis\ClientInterface;
use Predis\Command\RawCommand;
use Predis\Connection\Aggregate\ClusterInterface;
use Predis\Connection\Aggregate\ReplicationInterface;
use Predis\Connection\ConnectionException;
use Predis\Connection\NodeConnectionInterface;
use Predis\Response\ErrorInterface;
use Predis\Response\Status;

/**
 * A Predis client's connection to the node that serves one key: the client's own single
 * connection, the current master of a replication or Sentinel set-up, or a cluster slot's node.
 * Commands go straight to that node connection (so a write and its `WAIT` share it).
 */
final class PredisConnection implements Connection
{
    public function __construct(private ClientInterface $client, private string $routeKey = '')
    {
    }

    public function call(array $args): mixed
    {
        $reply = $this->pipeline([$args])[0];
        if ($reply instanceof ServerError) {
            throw $reply;
        }
        return $reply;
    }

    public function pipeline(array $commands): array
    {
        $node = $this->node();
        $sent = [];
        try {
            foreach ($commands as $args) {
                $command = RawCommand::create(...array_map('strval', $args));
                $node->writeRequest($command);
                $sent[] = $command;
            }
            $replies = [];
            foreach ($sent as $command) {
                $replies[] = $this->decode($node->readResponse($command));
            }
        } catch (ConnectionException $e) {
            throw new ConnectionLost("connection to {$this->describe()} lost: {$e->getMessage()}", 0, $e);
        }
        return $replies;
    }

    public function withReadTimeout(?float $seconds, callable $body): mixed
    {
        $node = $this->node();
        $node->connect();
        $resource = $node->getResource();
        $before = (float) $node->getParameters()->read_write_timeout ?: (float) ini_get('default_socket_timeout');
        $set = function (?float $s) use ($resource) {
            $s = $s === null ? 31536000.0 : $s;
            stream_set_timeout($resource, (int) floor($s), (int) (($s - floor($s)) * 1e6));
        };
        $set($seconds === null ? null : $seconds + self::REPLY_MARGIN_S);
        try {
            return $body();
        } finally {
            if (is_resource($resource)) {
                $set($before);
            }
        }
    }

    public function reconnect(): void
    {
        $node = $this->node();
        $node->disconnect();
        $connection = $this->client->getConnection();
        if ($connection instanceof \Predis\Connection\Aggregate\SentinelReplication) {
            $connection->querySentinel(); // the primary the sentinels name now
            $node = $this->node();
        }
        try {
            $node->connect();
        } catch (ConnectionException $e) {
            throw new ConnectionLost("could not reconnect to {$this->describe()}: {$e->getMessage()}", 0, $e);
        }
    }

    public function describe(): string
    {
        $p = $this->node()->getParameters();
        return "{$p->host}:{$p->port}";
    }

    private function node(): NodeConnectionInterface
    {
        $connection = $this->client->getConnection();
        if ($connection instanceof NodeConnectionInterface) {
            return $connection;
        }
        if ($connection instanceof ReplicationInterface) {
            return $connection->getMaster();
        }
        if ($connection instanceof ClusterInterface && method_exists($connection, 'getConnectionBySlot')) {
            $slot = $connection->getClusterStrategy()->getSlotByKey($this->routeKey);
            return $connection->getConnectionBySlot($slot);
        }
        throw new \Rlock\Exception\InvalidArgumentException('unsupported Predis connection: ' . get_debug_type($connection));
    }

    private function decode(mixed $reply): mixed
    {
        if ($reply instanceof ErrorInterface) {
            return new ServerError($reply->getMessage());
        }
        if ($reply instanceof Status) {
            return (string) $reply;
        }
        if (is_array($reply)) {
            return array_map(fn ($item) => $this->decode($item), $reply);
        }
        return $reply;
    }
}
