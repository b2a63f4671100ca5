<?php

declare(strict_types=1);

namespace Rlock\Laravel;

use Illuminate\Cache\RedisStore;
use Illuminate\Contracts\Redis\Factory as Redis;
use Rlock\Client;

/**
 * Laravel's Redis cache store with its locks on rlock: caching is unchanged, `lock()` and
 * `restoreLock()` return RlockLock on the store's lock connection (phpredis or Predis).
 *
 * Locks whose names start with one of `handed_over` (default: `laravel_unique_job:`, the
 * ShouldBeUnique lock that the dispatching request takes and a worker releases) are never bound
 * to the connection: they must outlive the process that took them.
 */
class RlockCacheStore extends RedisStore
{
    public const HANDED_OVER = ['laravel_unique_job:'];

    /** @var array<string, Client> by lock connection name */
    private array $clients = [];

    public function __construct(Redis $redis, $prefix = '', $connection = 'default', private readonly array $rlockOptions = [])
    {
        parent::__construct($redis, $prefix, $connection);
    }

    public function lock($name, $seconds = 0, $owner = null)
    {
        $handedOver = false;
        foreach ($this->rlockOptions['handed_over'] ?? self::HANDED_OVER as $prefix) {
            $handedOver = $handedOver || str_starts_with((string) $name, $prefix);
        }
        $watchdog = ($this->rlockOptions['watchdog'] ?? true) && !$handedOver;
        return new RlockLock($this->rlockClient(), $this->prefix . $name, $seconds, $owner, $watchdog);
    }

    public function restoreLock($name, $owner)
    {
        return $this->lock($name, 0, $owner);
    }

    private function rlockClient(): Client
    {
        $connection = $this->lockConnection();
        $options = array_intersect_key($this->rlockOptions, array_flip(['confirm', 'confirm_timeout_ms', 'on_confirm_failure']));
        return $this->clients[$connection->getName() ?? 'default'] ??= new Client($connection->client(), $options);
    }
}
