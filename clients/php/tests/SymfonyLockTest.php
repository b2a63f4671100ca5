<?php

declare(strict_types=1);

namespace Rlock\Tests;

use Rlock\Symfony\RlockStore;
use Rlock\Symfony\RlockStoreFactory;
use Rlock\Tests\Support\ServerTestCase;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Exception\UnserializableKeyException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\LockFactory;

/**
 * The behaviours Symfony's own tests check for its Redis store (saving, isolation, expiring,
 * blocking, shared locks, serialisation), written here for RlockStore, mostly through LockFactory.
 */
final class SymfonyLockTest extends ServerTestCase
{
    private function store(string $driver = 'phpredis', bool $watchdog = true): RlockStore
    {
        return new RlockStore(static::$server->connect($driver), 300.0, $watchdog);
    }

    /** @dataProvider drivers */
    public function testALockOfTheFactoryExcludesAnotherAndIsFreedByRelease(string $driver): void
    {
        $factory = new LockFactory($this->store($driver));
        $first = $factory->createLock('invoice');
        $second = $factory->createLock('invoice');
        $this->assertTrue($first->acquire());
        $this->assertTrue($first->acquire(), 'saving the same key twice is fine');
        $this->assertFalse($second->acquire());
        $this->assertTrue($factory->createLock('other')->acquire(), 'another resource is independent');
        $first->release();
        $this->assertFalse($first->isAcquired());
        $this->assertTrue($second->acquire());
    }

    /** @dataProvider drivers */
    public function testDeletingAnotherKeyLeavesTheHolderAlone(string $driver): void
    {
        $store = $this->store($driver);
        [$one, $two] = [new Key('r'), new Key('r')];
        $store->save($one);
        $store->delete($two);
        $this->assertTrue($store->exists($one));
        $this->assertFalse($store->exists($two));
    }

    /** @dataProvider drivers */
    public function testAcquireTrueBlocksInTheServerUntilTheHolderReleases(string $driver): void
    {
        $holder = $this->actor($driver);
        $holder->result(['op' => 'acquire', 'type' => 'write', 'key' => 'report']);
        // A forked child blocks in acquire(true); the actor holding it releases: the child must
        // get it the moment the holder lets go, with no retry loop (the queue shows it waiting).
        $lock = (new LockFactory($this->store($driver)))->createLock('report');
        $this->assertFalse($lock->acquire());
        $this->assertSame(0, $this->waiters('report', 'RWLOCK.INFO'), 'a non-blocking attempt does not queue');

        $blockedPid = pcntl_fork();
        if ($blockedPid === 0) {
            // The child: blocks in acquire(true), then reports the time it got the lock.
            $child = (new LockFactory($this->store($driver)))->createLock('report');
            $child->acquire(true);
            file_put_contents(sys_get_temp_dir() . "/rlock-php-blocked-{$this->token()}", (string) microtime(true));
            posix_kill(getmypid(), SIGKILL); // no PHPUnit shutdown in the child
        }
        $this->awaitTrue(fn () => $this->waiters('report', 'RWLOCK.INFO') === 1, 'acquire(true) waits in the queue');
        $released = microtime(true);
        $holder->result(['op' => 'release', 'type' => 'write', 'key' => 'report']);
        pcntl_waitpid($blockedPid, $status);
        $file = sys_get_temp_dir() . "/rlock-php-blocked-{$this->token()}";
        $this->assertFileExists($file, 'the blocked acquire returned');
        $granted = (float) file_get_contents($file);
        unlink($file);
        $this->assertLessThan(1.0, $granted - $released);
    }

    public function testExpiringWithLeases(): void
    {
        $store = $this->store('phpredis', false);
        $key = new Key('expiring');
        $store->save($key);
        $store->putOffExpiration($key, 0.2);
        $this->assertTrue($store->exists($key));
        $this->assertGreaterThanOrEqual(0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(0.2, $key->getRemainingLifetime());
        $this->awaitTrue(fn () => !$store->exists($key), 'the lease ends');
        $this->expectException(LockConflictedException::class);
        $store->putOffExpiration($key, 10);
    }

    public function testAPutOffShorterThanTheClockIsExpired(): void
    {
        $store = $this->store('phpredis', false);
        $key = new Key('short');
        $store->save($key);
        try {
            $store->putOffExpiration($key, 1 / 1000000);
            $this->fail('no LockExpiredException');
        } catch (LockExpiredException) {
        }
        $this->assertFalse($store->exists($key), 'an expired key is deleted');
    }

    public function testAnExpiredKeyIsNotSaved(): void
    {
        $store = $this->store();
        [$expired, $other] = [new Key('gone'), new Key('gone')];
        $expired->reduceLifetime(0);
        try {
            $store->save($expired);
            $this->fail('an expired key was saved');
        } catch (LockExpiredException) {
        }
        $this->assertFalse($store->exists($expired));
        $store->delete($other);
        $this->assertFalse($store->exists($other));
    }

    public function testTheWatchdogHoldsBeyondTheTtlWhileTheProcessLives(): void
    {
        $store = $this->store();
        $key = new Key('watched');
        $store->save($key);
        $store->putOffExpiration($key, 0.1);
        usleep(300000); // the assertion is that nothing happens: the time is the point here
        $this->assertTrue($store->exists($key));
        $this->assertTrue($key->isExpired(), "Symfony's own clock still says the TTL ran out");
    }

    /** @dataProvider drivers */
    public function testSharedLocks(string $driver): void
    {
        $store = $this->store($driver);
        // readers first: they share, a writer conflicts, a promotion with other readers conflicts
        [$a, $b, $c] = [new Key('s'), new Key('s'), new Key('s')];
        $store->saveRead($a);
        $store->saveRead($b);
        $this->assertTrue($store->exists($a) && $store->exists($b));
        $this->assertConflicts(fn () => $store->save($c));
        $this->assertConflicts(fn () => $store->save($a));
        $this->assertTrue($store->exists($a), 'a refused promotion keeps the read lock');
        $store->delete($b);
        // alone, the reader may promote; then others cannot read
        $store->save($a);
        $this->assertConflicts(fn () => $store->saveRead($b));
        $store->delete($a);
        $store->saveRead($b);
        $this->assertTrue($store->exists($b));
        $this->assertFalse($store->exists($a));
        $store->delete($b);
        // writer first, then demoted: others may read
        $store->save($a);
        $store->saveRead($a);
        $store->saveRead($b);
        $this->assertTrue($store->exists($a) && $store->exists($b));
    }

    /** @dataProvider drivers */
    public function testAcquireReadTrueWaitsForTheWriterInTheServer(string $driver): void
    {
        $holder = $this->actor($driver);
        $holder->result(['op' => 'acquire', 'type' => 'write', 'key' => 'doc']);
        $reader = $this->actor($driver);
        $reader->start(['op' => 'acquire', 'type' => 'read', 'key' => 'doc', 'wait_ms' => null]);
        $this->awaitTrue(fn () => $this->waiters('doc', 'RWLOCK.INFO') === 1, 'the reader is queued');
        $lock = (new LockFactory($this->store($driver)))->createLock('doc');
        $this->assertFalse($lock->acquireRead(), 'a reader arriving behind a queue waits its turn');
        $holder->result(['op' => 'release', 'type' => 'write', 'key' => 'doc']);
        $this->assertTrue($reader->join()['ok']);
        $this->assertTrue($lock->acquireRead(true));
    }

    public function testAWatchdogKeyRefusesSerialisationALeaseKeyDoesNot(): void
    {
        $key = new Key('serialised');
        $this->store()->save($key);
        try {
            serialize($key);
            $this->fail('a watchdog key was serialised');
        } catch (UnserializableKeyException) {
        }
        $leased = new Key('leased');
        $this->store('phpredis', false)->save($leased);
        $moved = unserialize(serialize($leased));
        $this->assertTrue($this->store('phpredis', false)->exists($moved), 'the lease key is the same owner elsewhere');
    }

    public function testTheDsnFactory(): void
    {
        $store = RlockStoreFactory::createStore('rlock://127.0.0.1:' . static::$server->port . '?watchdog=0&ttl=60&predis=1');
        $key = new Key('dsn');
        $store->save($key);
        $ttl = \Rlock\Replies::map(static::$server->admin('RWLOCK.INFO', 'dsn'))['ttl'];
        $this->assertGreaterThan(50000, $ttl);
        $this->assertLessThanOrEqual(60000, $ttl);
        foreach (['redis://x', 'rlock://h?bogus=1', 'rlock:///nohost'] as $bad) {
            try {
                RlockStoreFactory::createStore($bad);
                $this->fail("accepted $bad");
            } catch (\Symfony\Component\Lock\Exception\InvalidArgumentException $e) {
                $this->assertMatchesRegularExpression('/rlock DSN/', $e->getMessage());
            }
        }
    }

    public function testBadTtlsAreRefusedAndChangeNothing(): void
    {
        foreach ([fn () => new RlockStore(static::$server->connect(), 0.0), fn () => new RlockStore(static::$server->connect(), -1.0)] as $make) {
            try {
                $make();
                $this->fail('a TTL <= 0 was accepted');
            } catch (\Symfony\Component\Lock\Exception\InvalidTtlException $e) {
                $this->assertStringContainsString('strictly positive TTL', $e->getMessage());
            }
        }
        $store = $this->store();
        $key = new Key('ttl');
        $store->save($key);
        $before = static::$server->admin('RWLOCK.INFO', 'ttl');
        try {
            $store->putOffExpiration($key, -1);
            $this->fail('a negative putOffExpiration was accepted');
        } catch (\Symfony\Component\Lock\Exception\InvalidTtlException $e) {
            $this->assertStringContainsString('TTL greater than 0', $e->getMessage());
        }
        $this->assertCount(1, $this->holders($before));
        $this->assertSame($this->holders($before), $this->holders(static::$server->admin('RWLOCK.INFO', 'ttl')));
    }

    /** Each holder's owner, mode, holds and token (not its ttl, which runs down). */
    private function holders(mixed $info): array
    {
        return array_map(function ($holder) {
            $holder = \Rlock\Replies::map($holder);
            return [$holder['owner'], $holder['mode'], $holder['holds'], $holder['token']];
        }, \Rlock\Replies::map($info)['holders'] ?? []);
    }

    public function testAnotherTypeAtTheKeyIsAStorageErrorNotAConflict(): void
    {
        static::$server->admin('SET', 'taken', 'plain');
        try {
            $this->store()->save(new Key('taken'));
            $this->fail('no LockStorageException');
        } catch (\Symfony\Component\Lock\Exception\LockStorageException $e) {
            $this->assertStringContainsString('WRONGTYPE', $e->getMessage());
        }
        $this->assertSame('plain', static::$server->admin('GET', 'taken'));
    }

    private function assertConflicts(callable $call): void
    {
        try {
            $call();
            $this->fail('no LockConflictedException');
        } catch (LockConflictedException) {
            $this->addToAssertionCount(1);
        }
    }

    private function token(): string
    {
        return (string) static::$server->port;
    }
}
