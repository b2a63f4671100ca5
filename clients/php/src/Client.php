<?php

declare(strict_types=1);

namespace Rlock;

use Rlock\Connection\Connection;
use Rlock\Connection\PhpRedisConnection;
use Rlock\Connection\PredisConnection;
use Rlock\Exception\InvalidArgumentException;

/**
 * The entry point: rlock's types over a connection you already have, a phpredis `Redis` or
 * `RedisCluster`, or a Predis client (single server, Sentinel replication or cluster).
 *
 *     $rlock = new Rlock\Client($redis);                  // confirm: 'auto' (docs/availability.md)
 *     $lock  = $rlock->lock('order:42');                  // this process is the owner
 *     $rw    = $rlock->readWriteLock('catalog');
 *     $sem   = $rlock->semaphore('gpus');
 *
 * Options: `confirm` ('auto', 'off', 'aof' or a replica count), `confirm_timeout_ms` (1000),
 * `on_confirm_failure` ('raise' or 'warn'), `owner` (default: a random id and this process's pid,
 * so every Lock of this process re-enters and other processes are excluded), `logger`
 * (a callable taking a message).
 *
 * For each type, `lease` (seconds, default none: the server's watchdog on this connection; use a
 * lease with persistent connections) and `on_lost` (called with the holding when a loss is found).
 */
final class Client
{
    private const OPTIONS = ['confirm', 'confirm_timeout_ms', 'on_confirm_failure', 'owner', 'logger'];
    private const TYPE_OPTIONS = ['lease', 'on_lost', 'owner'];

    private readonly Confirm $confirm;
    private readonly string $processId;
    private readonly ?string $owner;
    private readonly ?\Closure $logger;
    /** @var array<string, Session> */
    private array $sessions = [];

    public function __construct(private readonly \Redis|\RedisCluster|\Predis\ClientInterface|Connection $redis, array $options = [])
    {
        self::checkOptions($options, self::OPTIONS, 'Client');
        $this->confirm = Confirm::from(
            $options['confirm'] ?? 'auto',
            $options['confirm_timeout_ms'] ?? null,
            $options['on_confirm_failure'] ?? 'raise'
        );
        if (isset($options['owner'])) {
            Holding::checkOwner($options['owner']);
        }
        $this->owner = $options['owner'] ?? null;
        $this->logger = isset($options['logger']) ? \Closure::fromCallable($options['logger']) : null;
        $this->processId = bin2hex(random_bytes(8));
    }

    /**
     * A client on the primary that Sentinel names (phpredis `RedisSentinel` for the discovery).
     *
     * @param list<array{0: string, 1: int}> $sentinels host and port of each sentinel
     */
    public static function fromSentinel(array $sentinels, string $masterName, array $options = [], float $timeout = 2.0): self
    {
        $locate = static function () use ($sentinels, $masterName, $timeout): array {
            $errors = [];
            foreach ($sentinels as [$host, $port]) {
                try {
                    $address = (new \RedisSentinel($host, (int) $port, $timeout))->getMasterAddrByName($masterName);
                    if (is_array($address) && count($address) === 2) {
                        return [$address[0], (int) $address[1]];
                    }
                    $errors[] = "$host:$port does not know '$masterName'";
                } catch (\RedisException $e) {
                    $errors[] = "$host:$port: {$e->getMessage()}";
                }
            }
            throw new Exception\LockException("no sentinel named a primary for '$masterName': " . implode('; ', $errors));
        };
        [$host, $port] = $locate();
        $redis = new \Redis();
        $redis->connect($host, $port, $timeout);
        // After a failover the session reconnects to the primary the sentinels name then.
        return new self(new PhpRedisConnection($redis, null, \Closure::fromCallable($locate)), $options);
    }

    /** The owner of this process's holdings: a random id and the pid (a forked child is another owner). */
    public function owner(): string
    {
        return $this->owner ?? $this->processId . ':' . getmypid();
    }

    public function lock(string $name, array $options = []): Lock
    {
        self::checkOptions($options, self::TYPE_OPTIONS, 'lock');
        return new Lock($this->session($name), $name, $options['owner'] ?? $this->owner(), $options['lease'] ?? null, self::closure($options['on_lost'] ?? null));
    }

    public function readWriteLock(string $name, array $options = []): ReadWriteLock
    {
        self::checkOptions($options, self::TYPE_OPTIONS, 'readWriteLock');
        return new ReadWriteLock($this->session($name), $name, $options['owner'] ?? $this->owner(), $options['lease'] ?? null, self::closure($options['on_lost'] ?? null));
    }

    public function semaphore(string $name, array $options = []): Semaphore
    {
        self::checkOptions($options, self::TYPE_OPTIONS, 'semaphore');
        return new Semaphore($this->session($name), $name, $options['owner'] ?? $this->owner(), $options['lease'] ?? null, self::closure($options['on_lost'] ?? null));
    }

    /** The session of the node that serves `$key` (one for a single server; a cluster's, per key). */
    public function session(string $key): Session
    {
        if ($key === '') {
            throw new InvalidArgumentException('a lock name must not be empty');
        }
        $clustered = $this->redis instanceof \RedisCluster
            || ($this->redis instanceof \Predis\ClientInterface && $this->redis->getConnection() instanceof \Predis\Connection\Aggregate\ClusterInterface);
        $route = $clustered ? $key : '';
        return $this->sessions[$route] ??= new Session(match (true) {
            $this->redis instanceof Connection => $this->redis,
            $this->redis instanceof \Predis\ClientInterface => new PredisConnection($this->redis, $route),
            default => new PhpRedisConnection($this->redis, $clustered ? $route : null),
        }, $this->confirm, $this->logger);
    }

    private static function closure(mixed $callable): ?\Closure
    {
        if ($callable === null) {
            return null;
        }
        if (!is_callable($callable)) {
            throw new InvalidArgumentException('on_lost must be callable');
        }
        return \Closure::fromCallable($callable);
    }

    private static function checkOptions(array $options, array $known, string $where): void
    {
        $unknown = array_diff(array_keys($options), $known);
        if ($unknown !== []) {
            throw new InvalidArgumentException(
                sprintf('unknown %s option(s): %s (known: %s)', $where, implode(', ', $unknown), implode(', ', $known))
            );
        }
    }
}
