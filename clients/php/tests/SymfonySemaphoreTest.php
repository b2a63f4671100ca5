<?php

declare(strict_types=1);

namespace Rlock\Tests;

use Rlock\Symfony\RlockSemaphoreStore;
use Rlock\Tests\Support\ServerTestCase;
use Symfony\Component\Semaphore\Exception\SemaphoreExpiredException;
use Symfony\Component\Semaphore\Key;
use Symfony\Component\Semaphore\SemaphoreFactory;

/** symfony/semaphore on RlockSemaphoreStore, through SemaphoreFactory. */
final class SymfonySemaphoreTest extends ServerTestCase
{
    /** @dataProvider drivers */
    public function testTheLimitIsKeptAndWeightsAddUp(string $driver): void
    {
        $factory = new SemaphoreFactory(new RlockSemaphoreStore(static::$server->connect($driver)));
        $heavy = $factory->createSemaphore('pdf', 3, 2);
        $light = $factory->createSemaphore('pdf', 3);
        $late = $factory->createSemaphore('pdf', 3);
        $this->assertTrue($heavy->acquire());
        $this->assertTrue($light->acquire());
        $this->assertFalse($late->acquire());
        $this->assertTrue($heavy->isAcquired());
        $heavy->release();
        $this->assertFalse($heavy->isAcquired());
        $this->assertTrue($late->acquire());
        $this->assertSame('1', static::$server->admin('GET', 'pdf'), '3 - light 1 - late 1');
    }

    public function testALeasedSemaphoreEndsWithItsTtl(): void
    {
        $store = new RlockSemaphoreStore(static::$server->connect(), false);
        $key = new Key('leased', 1);
        $store->save($key, 0.2);
        $this->assertTrue($store->exists($key));
        $this->awaitTrue(fn () => !$store->exists($key), 'the lease ends');
        $this->expectException(SemaphoreExpiredException::class);
        $store->putOffExpiration($key, 10);
    }

    public function testPermitsComeBackWhenTheHolderProcessIsKilled(): void
    {
        $holder = $this->actor();
        $holder->result(['op' => 'set_permits', 'key' => 'slots', 'permits' => 1]);
        $holder->result(['op' => 'acquire', 'type' => 'semaphore', 'key' => 'slots']);
        $semaphore = (new SemaphoreFactory(new RlockSemaphoreStore(static::$server->connect())))->createSemaphore('slots', 1);
        $this->assertFalse($semaphore->acquire());
        $holder->kill();
        $this->awaitTrue(fn () => $semaphore->acquire(), 'the permit is back', 1.0);
    }
}
