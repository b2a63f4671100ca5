<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

use PHPUnit\Framework\TestCase;
use Rlock\Client;

/** A test class with one redis-server (module loaded) of its own, emptied before each test. */
abstract class ServerTestCase extends TestCase
{
    protected static RedisServer $server;
    /** @var list<ActorProcess> */
    private array $actors = [];

    public static function setUpBeforeClass(): void
    {
        static::$server = new RedisServer();
    }

    public static function tearDownAfterClass(): void
    {
        static::$server->stop();
    }

    protected function setUp(): void
    {
        static::$server->admin('FLUSHALL');
    }

    protected function tearDown(): void
    {
        foreach ($this->actors as $actor) {
            $actor->close();
        }
        $this->actors = [];
    }

    public function drivers(): array
    {
        return ['phpredis' => ['phpredis'], 'predis' => ['predis']];
    }

    protected function client(string $driver = 'phpredis', array $options = []): Client
    {
        return new Client(static::$server->connect($driver), $options);
    }

    protected function actor(string $driver = 'phpredis', ?string $owner = null): ActorProcess
    {
        return $this->actors[] = new ActorProcess(static::$server->port, $driver, null, null, $owner);
    }

    /**
     * A lock held by this process and another process waiting for it in the server's queue:
     * [the holder's Lock, the waiter (its acquire started; join() reads the grant)].
     */
    protected function heldWithAWaiter(string $driver, string $key): array
    {
        $holder = $this->client($driver)->lock($key);
        $this->assertTrue($holder->acquire());
        $waiter = $this->actor($driver);
        $waiter->start(['op' => 'acquire', 'type' => 'lock', 'key' => $key, 'wait_ms' => 60000]);
        $this->awaitTrue(fn () => $this->waiters($key) === 1, 'the other process waits in the queue');
        return [$holder, $waiter];
    }

    /** Polls a condition on the server's state until true (a generous deadline: a loaded machine). */
    protected function awaitTrue(callable $condition, string $what, float $seconds = 10.0): void
    {
        $deadline = microtime(true) + $seconds;
        while (!$condition()) {
            if (microtime(true) > $deadline) {
                $this->fail("not within {$seconds} s: $what");
            }
            usleep(2000);
        }
    }

    protected function waiters(string $key, string $command = 'RLOCK.INFO'): int
    {
        $info = \Rlock\Replies::map(static::$server->admin($command, $key));
        return $command === 'RWLOCK.INFO'
            ? (int) ($info['waiting_readers'] ?? 0) + (int) ($info['waiting_writers'] ?? 0)
            : (int) ($info['waiters'] ?? 0);
    }
}
