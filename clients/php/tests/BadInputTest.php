<?php

declare(strict_types=1);

namespace Rlock\Tests;

use Rlock\Exception\InvalidArgumentException;
use Rlock\Exception\LockException;
use Rlock\Exception\ModuleMissingException;
use Rlock\Exception\RlockException;
use Rlock\Tests\Support\RedisServer;
use Rlock\Tests\Support\ServerTestCase;

/** Every bad input: a clear exception, and the server's data exactly as it was. */
final class BadInputTest extends ServerTestCase
{
    public function badCalls(): array
    {
        return [
            'empty lock name' => [fn ($c) => $c->lock(''), 'must not be empty'],
            'reserved owner' => [fn ($c) => $c->lock('k', ['owner' => 'rlock:x']), "reserved by rlock"],
            'empty owner' => [fn ($c) => $c->lock('k', ['owner' => '']), 'must not be empty'],
            'unknown option' => [fn ($c) => $c->lock('k', ['leese' => 1]), 'unknown lock option(s): leese'],
            'zero lease' => [fn ($c) => $c->lock('k', ['lease' => 0]), 'the lease must be between'],
            'negative lease' => [fn ($c) => $c->lock('k', ['lease' => -1]), 'the lease must be between'],
            'lease past a year' => [fn ($c) => $c->lock('k', ['lease' => 4e7]), 'the lease must be between'],
            'negative wait' => [fn ($c) => $c->lock('k')->acquire(-1.0), 'the wait must be between'],
            'NaN wait' => [fn ($c) => $c->lock('k')->acquire(NAN), 'the wait must be between'],
            'zero permits' => [fn ($c) => $c->semaphore('s')->acquire(0), 'permits must be at least 1'],
            'negative permits set' => [fn ($c) => $c->semaphore('s')->trySetPermits(-1), 'permits must be at least 0'],
            'releasing zero permits' => [fn ($c) => $c->semaphore('s')->release(0), 'permits must be at least 1'],
            'zero refresh lease' => [fn ($c) => $c->lock('held')->refresh(0.0), 'the lease must be between'],
            'guard without a command' => [fn ($c) => $c->lock('held')->guard(), 'guard() needs a command'],
            'on_lost not callable' => [fn ($c) => $c->lock('k', ['on_lost' => 'no such function']), 'on_lost must be callable'],
            'releasing more permits than held' => [fn ($c) => $c->semaphore('sem')->release(5), 'holds only 2 permits'],
            'a server-refused command' => [fn ($c) => $c->readWriteLock('k', ['owner' => 'o:write'])->readLock()->acquire(), ':write'],
        ];
    }

    /** @dataProvider badCalls */
    public function testABadCallIsRefusedClearlyAndChangesNothing(\Closure $call, string $message): void
    {
        $client = $this->client();
        $this->assertTrue($client->lock('held')->acquire());
        $this->assertTrue($client->semaphore('sem')->trySetPermits(3));
        $this->assertTrue($client->semaphore('sem')->acquire(2));
        $before = $this->snapshot();
        try {
            $call($client);
            $this->fail('no exception');
        } catch (RlockException $e) {
            $this->assertStringContainsString($message, $e->getMessage());
        }
        $this->assertSame($before, $this->snapshot());
    }

    public function badClientOptions(): array
    {
        return [
            'unknown client option' => [['confrim' => 'off'], 'unknown Client option(s): confrim'],
            'bad confirm' => [['confirm' => 'sometimes'], "confirm is 'auto', 'off', 'aof' or a replica count"],
            'negative replicas' => [['confirm' => -1], 'replica count'],
            'bad confirm timeout' => [['confirm_timeout_ms' => 0], 'at least 1 ms'],
            'bad on_confirm_failure' => [['on_confirm_failure' => 'ignore'], "'raise' or 'warn'"],
            'reserved client owner' => [['owner' => 'rlock:me'], 'reserved by rlock'],
        ];
    }

    /** @dataProvider badClientOptions */
    public function testABadClientOptionIsRefusedClearly(array $options, string $message): void
    {
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage($message);
        $this->client('phpredis', $options);
    }

    /** @dataProvider drivers */
    public function testTheFirstCallOnAServerWithoutTheModuleSaysSo(string $driver): void
    {
        $plain = new RedisServer(false);
        try {
            $lock = (new \Rlock\Client($plain->connect($driver)))->lock('k');
            try {
                $lock->acquire();
                $this->fail('no ModuleMissingException');
            } catch (ModuleMissingException $e) {
                $this->assertStringContainsString("the rlock module is not loaded on 127.0.0.1:{$plain->port}", $e->getMessage());
                $this->assertInstanceOf(LockException::class, $e);
            }
            $this->assertSame(0, $plain->connect()->dbSize());
        } finally {
            $plain->stop();
        }
    }

    private function snapshot(): array
    {
        $keys = static::$server->admin('KEYS', '*');
        sort($keys);
        $state = [];
        foreach ($keys as $key) {
            $state[$key] = static::$server->admin('DUMP', $key);
        }
        return $state;
    }
}
