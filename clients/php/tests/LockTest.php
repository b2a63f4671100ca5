<?php

declare(strict_types=1);

namespace Rlock\Tests;

use Rlock\Exception\NotHeldException;
use Rlock\Exception\UpgradeRefusedException;
use Rlock\Exception\WrongTypeException;
use Rlock\Replies;
use Rlock\Tests\Support\ServerTestCase;

/** Each type through the public API, with phpredis and with Predis, against a real server. */
final class LockTest extends ServerTestCase
{
    /** @dataProvider drivers */
    public function testAFreeLockIsGrantedWithARisingTokenAndTheOwnerReenters(string $driver): void
    {
        $lock = $this->client($driver)->lock('order:42');
        $this->assertTrue($lock->acquire());
        $token = $lock->token();
        $this->assertGreaterThan(0, $token);
        $this->assertTrue($lock->acquire());
        $this->assertSame($token, $lock->token());
        $info = Replies::map(static::$server->admin('RLOCK.INFO', 'order:42'));
        $this->assertSame([2, $lock->owner(), $token], [$info['holds'], $info['owner'], $info['token']]);
        $this->assertNotFalse($info['watchdog'], 'no lease given: the holding is bound to the connection');
        $this->assertSame(1, $lock->release());
        $this->assertSame(0, $lock->release());
        $this->assertFalse(static::$server->admin('RLOCK.INFO', 'order:42'));
        $this->assertTrue($lock->acquire());
        $this->assertGreaterThan($token, $lock->token(), 'a later grant has a larger fencing token');
    }

    /** @dataProvider drivers */
    public function testAnotherOwnerIsExcludedAndItsReleaseIsRefused(string $driver): void
    {
        $mine = $this->client($driver)->lock('k');
        $theirs = $this->client($driver)->lock('k');
        $this->assertTrue($mine->acquire());
        $this->assertFalse($theirs->acquire());
        $this->assertFalse($theirs->isHeld());
        $this->expectException(NotHeldException::class);
        try {
            $theirs->release();
        } finally {
            $this->assertTrue($mine->isHeld(), 'the holder keeps it');
        }
    }

    /** @dataProvider drivers */
    public function testAWaitThatRunsOutWaitedInTheServersQueue(string $driver): void
    {
        $this->assertTrue($this->client($driver)->lock('k')->acquire());
        $waiter = $this->client($driver)->lock('k');
        $started = microtime(true);
        $this->assertFalse($waiter->acquire(0.3));
        $this->assertGreaterThanOrEqual(0.29, microtime(true) - $started);
        $this->assertSame(0, $this->waiters('k'), 'the wait left the queue');
    }

    /** @dataProvider drivers */
    public function testAWaiterInAnotherProcessIsGrantedWhenTheHolderReleases(string $driver): void
    {
        [$holder, $waiter] = $this->heldWithAWaiter($driver, 'k');
        $this->assertSame(0, $holder->release());
        $reply = $waiter->join();
        $this->assertTrue($reply['ok'], json_encode($reply));
        $this->assertGreaterThan($holder->token(), $reply['result']);
    }

    /** @dataProvider drivers */
    public function testALeaseEndsTheHoldingAndTheHolderFindsItLost(string $driver): void
    {
        $lost = [];
        $lock = $this->client($driver)->lock('k', ['lease' => 0.2, 'on_lost' => function ($holding) use (&$lost) {
            $lost[] = $holding->name();
        }]);
        $this->assertTrue($lock->acquire());
        $this->assertNotFalse(static::$server->admin('RLOCK.INFO', 'k'));
        $this->awaitTrue(fn () => static::$server->admin('RLOCK.INFO', 'k') === false, 'the lease ends');
        $this->assertFalse($lock->isHeld());
        $this->assertTrue($lock->isLost());
        $this->assertSame(['k'], $lost, 'told once');
        $this->expectException(NotHeldException::class);
        $lock->refresh();
    }

    /** @dataProvider drivers */
    public function testRefreshStartsTheLeaseAgain(string $driver): void
    {
        $lock = $this->client($driver)->lock('k', ['lease' => 5.0]);
        $this->assertTrue($lock->acquire());
        $lock->refresh(100.0);
        $ttl = Replies::map(static::$server->admin('RLOCK.INFO', 'k'))['ttl'];
        $this->assertGreaterThan(5000, $ttl);
        $this->assertFalse(Replies::map(static::$server->admin('RLOCK.INFO', 'k'))['watchdog']);
    }

    /** @dataProvider drivers */
    public function testAGuardedWriteRunsOnlyWhileHeld(string $driver): void
    {
        $lock = $this->client($driver)->lock('k');
        $this->assertTrue($lock->acquire());
        $this->assertSame('OK', $lock->guard('SET', 'data', 'v1'));
        $lock->forceRelease();
        try {
            $lock->guard('SET', 'data', 'v2');
            $this->fail('a guarded write after the loss ran');
        } catch (NotHeldException) {
        }
        $this->assertSame('v1', static::$server->admin('GET', 'data'));
    }

    /** @dataProvider drivers */
    public function testReadersShareAWriterIsAloneAndAReaderCannotUpgrade(string $driver): void
    {
        $a = $this->client($driver)->readWriteLock('doc');
        $b = $this->client($driver)->readWriteLock('doc');
        $this->assertTrue($a->readLock()->acquire());
        $this->assertTrue($b->readLock()->acquire());
        $this->assertFalse($this->client($driver)->readWriteLock('doc')->writeLock()->acquire());
        try {
            $a->writeLock()->acquire();
            $this->fail('an upgrade was not refused');
        } catch (UpgradeRefusedException) {
        }
        $a->readLock()->release();
        $b->readLock()->release();
        $this->assertTrue($a->writeLock()->acquire());
        $this->assertTrue($a->readLock()->acquire(), 'the writer may read (downgrade)');
        $this->assertSame(0, $a->writeLock()->release());
        $this->assertTrue($a->readLock()->isHeld());
        $this->assertTrue($b->readLock()->acquire(), 'after the downgrade, readers share');
    }

    /** @dataProvider drivers */
    public function testSemaphorePermitsAreSetOnceCountedAndOwned(string $driver): void
    {
        $a = $this->client($driver)->semaphore('gpus');
        $b = $this->client($driver)->semaphore('gpus');
        $this->assertTrue($a->trySetPermits(3));
        $this->assertFalse($b->trySetPermits(10));
        $this->assertTrue($a->acquire(2));
        $this->assertSame(1, $b->availablePermits());
        $this->assertFalse($b->acquire(2));
        $this->assertTrue($b->acquire(1));
        $this->assertSame(0, $a->availablePermits());
        $this->assertSame(1, $a->release());
        $this->assertSame(4, $a->addPermits(3));
        $this->assertSame(0, $a->release());
        $this->expectException(NotHeldException::class);
        $a->release();
    }

    /** @dataProvider drivers */
    public function testACallAfterADroppedConnectionIsSentAgainOnANewOne(string $driver): void
    {
        $redis = static::$server->connect($driver);
        $lock = (new \Rlock\Client($redis))->lock('k', ['lease' => 60.0]);
        $this->assertTrue($lock->acquire());
        $id = $redis instanceof \Redis ? $redis->rawCommand('CLIENT', 'ID') : $redis->executeRaw(['CLIENT', 'ID']);
        static::$server->admin('CLIENT', 'KILL', 'ID', (string) $id);
        $this->assertSame(0, $lock->release(), 'the release reached the server on a new connection');
        $this->assertFalse(static::$server->admin('RLOCK.INFO', 'k'));
    }

    /** @dataProvider drivers */
    public function testAWatchdogHoldingWhoseConnectionDroppedIsFoundLost(string $driver): void
    {
        $redis = static::$server->connect($driver);
        $lost = 0;
        $lock = (new \Rlock\Client($redis))->lock('k', ['on_lost' => function () use (&$lost) {
            $lost++;
        }]);
        $this->assertTrue($lock->acquire());
        $id = $redis instanceof \Redis ? $redis->rawCommand('CLIENT', 'ID') : $redis->executeRaw(['CLIENT', 'ID']);
        static::$server->admin('CLIENT', 'KILL', 'ID', (string) $id);
        $this->assertFalse(static::$server->admin('RLOCK.INFO', 'k'), 'the server ended it with its connection');
        $this->assertFalse($lock->isHeld());
        $this->assertSame(1, $lost);
        $this->expectException(NotHeldException::class);
        $lock->release();
    }

    /** @dataProvider drivers */
    public function testAnotherTypeAtTheKeyIsWrongTypeAndChangesNothing(string $driver): void
    {
        static::$server->admin('SET', 'plain', 'value');
        $client = $this->client($driver);
        foreach ([fn () => $client->lock('plain')->acquire(), fn () => $client->readWriteLock('plain')->readLock()->acquire()] as $call) {
            try {
                $call();
                $this->fail('no WrongTypeException');
            } catch (WrongTypeException) {
            }
        }
        $this->assertSame('value', static::$server->admin('GET', 'plain'));
    }
}
