<?php

declare(strict_types=1);

namespace Rlock\Laravel;

use Illuminate\Cache\CacheManager;
use Illuminate\Support\ServiceProvider;

/**
 * Registers the `rlock` cache driver: a Redis cache store whose locks are rlock's. In
 * config/cache.php, `'driver' => 'rlock'` in place of `'driver' => 'redis'` (same `connection`,
 * `lock_connection`, `prefix`), plus the optional `watchdog` (true), `handed_over` (lock name
 * prefixes never bound to the connection, default ['laravel_unique_job:']) and `confirm` ('auto').
 */
class RlockServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        $this->app->make('cache')->extend('rlock', function ($app, array $config) {
            /** @var CacheManager $this */
            $store = new RlockCacheStore(
                $app['redis'],
                $config['prefix'] ?? $app['config']['cache.prefix'] ?? '',
                $config['connection'] ?? 'default',
                array_intersect_key($config, array_flip(['watchdog', 'handed_over', 'confirm', 'confirm_timeout_ms', 'on_confirm_failure'])),
            );
            if (isset($config['lock_connection'])) {
                $store->setLockConnection($config['lock_connection']);
            }
            return $this->repository($store);
        });
    }
}
