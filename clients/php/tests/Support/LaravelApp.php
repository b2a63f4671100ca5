<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

use Illuminate\Cache\CacheManager;
use Illuminate\Config\Repository as Config;
use Illuminate\Container\Container;
use Illuminate\Redis\RedisManager;
use Illuminate\Support\Facades\Facade;
use Rlock\Laravel\RlockServiceProvider;

/**
 * The parts of a Laravel application the cache needs (container, config, Redis and cache
 * managers, the facades), with the rlock driver configured as an application would.
 */
final class LaravelApp
{
    public static function boot(int $port, string $client = 'phpredis', array $store = []): Container
    {
        $app = new Container();
        Container::setInstance($app);
        $app->instance('config', new Config([
            'database' => ['redis' => [
                'client' => $client,
                'options' => ['prefix' => ''],
                'default' => ['host' => '127.0.0.1', 'port' => $port, 'database' => 0, 'read_timeout' => 60],
            ]],
            'cache' => [
                'default' => 'redis',
                'prefix' => 'app',
                'stores' => ['redis' => ['driver' => 'rlock', 'connection' => 'default', 'lock_connection' => 'default'] + $store],
            ],
        ]));
        $app->singleton('redis', fn ($app) => new RedisManager($app, $client, $app['config']['database.redis']));
        $app->singleton('cache', fn ($app) => new CacheManager($app));
        $app->singleton('cache.store', fn ($app) => $app['cache']->driver());
        $app->alias('cache.store', \Illuminate\Contracts\Cache\Repository::class);
        $app->alias('cache', \Illuminate\Contracts\Cache\Factory::class);
        Facade::clearResolvedInstances();
        Facade::setFacadeApplication($app);
        (new RlockServiceProvider($app))->boot();
        return $app;
    }
}
