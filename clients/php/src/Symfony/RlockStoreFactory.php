<?php

declare(strict_types=1);

namespace Rlock\Symfony;

use Rlock\Client;
use Symfony\Component\Lock\Exception\InvalidArgumentException;

/**
 * Builds an RlockStore from a DSN, for `framework.lock` set-ups that take a store from a factory
 * service (see the README):
 *
 *     rlock://[:password@]host[:port][?watchdog=1&ttl=300&confirm=auto&predis=0]
 *
 * `watchdog=0` gives Symfony's TTL semantics (leases); `predis=1` uses Predis instead of phpredis;
 * `confirm` is the replica confirmation (auto, off, aof or a count).
 */
final class RlockStoreFactory
{
    public static function createStore(string $dsn): RlockStore
    {
        $parts = parse_url($dsn);
        if ($parts === false || ($parts['scheme'] ?? '') !== 'rlock' || !isset($parts['host'])) {
            throw new InvalidArgumentException("not an rlock DSN (rlock://host[:port][?options]): '$dsn'");
        }
        parse_str($parts['query'] ?? '', $query);
        $unknown = array_diff(array_keys($query), ['watchdog', 'ttl', 'confirm', 'predis']);
        if ($unknown !== []) {
            throw new InvalidArgumentException('unknown rlock DSN option(s): ' . implode(', ', $unknown));
        }
        $port = (int) ($parts['port'] ?? 6379);
        $password = isset($parts['pass']) ? urldecode($parts['pass']) : null;
        if (filter_var($query['predis'] ?? '0', FILTER_VALIDATE_BOOL)) {
            $redis = new \Predis\Client(['host' => $parts['host'], 'port' => $port] + ($password === null ? [] : ['password' => $password]));
        } else {
            $redis = new \Redis();
            $redis->connect($parts['host'], $port);
            if ($password !== null) {
                $redis->auth($password);
            }
        }
        $confirm = $query['confirm'] ?? 'auto';
        return new RlockStore(
            new Client($redis, ['confirm' => ctype_digit((string) $confirm) ? (int) $confirm : $confirm]),
            (float) ($query['ttl'] ?? 300.0),
            filter_var($query['watchdog'] ?? '1', FILTER_VALIDATE_BOOL),
        );
    }
}
