<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

/** A new connection by driver name: phpredis `Redis` or a Predis client. */
final class Drivers
{
    public const ALL = ['phpredis', 'predis'];

    public static function connect(string $driver, int $port, ?string $user = null, ?string $password = null): \Redis|\Predis\Client
    {
        if ($driver === 'phpredis') {
            $redis = new \Redis();
            $redis->connect('127.0.0.1', $port, 5.0);
            if ($password !== null) {
                $redis->auth($user === null ? $password : [$user, $password]);
            }
            return $redis;
        }
        if ($driver === 'predis') {
            $client = new \Predis\Client(['host' => '127.0.0.1', 'port' => $port, 'read_write_timeout' => 60]);
            if ($password !== null) {
                // Predis 1.1 knows no ACL user name: AUTH user password on every (re)connection.
                $client->getConnection()->addConnectCommand(
                    \Predis\Command\RawCommand::create('AUTH', ...($user === null ? [$password] : [$user, $password]))
                );
            }
            $client->connect();
            return $client;
        }
        throw new \InvalidArgumentException("unknown driver '$driver'");
    }
}
