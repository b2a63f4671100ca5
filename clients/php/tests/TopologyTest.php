<?php

declare(strict_types=1);

namespace Rlock\Tests;

use PHPUnit\Framework\TestCase;
use Rlock\Client;
use Rlock\Exception\NotConfirmedException;
use Rlock\Replies;
use Rlock\Tests\Support\Drivers;
use Rlock\Tests\Support\Topology;

/** Replicas, Sentinel and Cluster from the shared topology harness (clients/harness). */
final class TopologyTest extends TestCase
{
    /** @dataProvider drivers */
    public function testAcquisitionsAreConfirmedByTheReplicasAndUndoneWhenNot(string $driver): void
    {
        $topology = new Topology('replicated');
        try {
            $primary = $topology->description['primary']['port'];
            $replica = $topology->description['replicas'][0]['port'];
            // A generous timeout where the replica is healthy (a loaded machine), a short one where it is paused.
            $lock = (new Client(Drivers::connect($driver, $primary), ['confirm_timeout_ms' => 10000]))->lock('confirmed');
            $client = new Client(Drivers::connect($driver, $primary), ['confirm_timeout_ms' => 300]);
            $this->assertTrue($lock->acquire());
            $this->assertSame($lock->token(), Replies::map(Drivers::connect('phpredis', $replica)->rawCommand('RLOCK.INFO', 'confirmed'))['token'],
                'the replica has the holding when acquire() returns');

            $topology->command(['op' => 'pause', 'port' => $replica]);
            try {
                $client->lock('unconfirmed')->acquire();
                $this->fail('no NotConfirmedException');
            } catch (NotConfirmedException $e) {
                $this->assertStringContainsString('confirmed by 0 of 1 replicas within 300 ms; undone', $e->getMessage());
            }
            $this->assertFalse(Drivers::connect('phpredis', $primary)->rawCommand('RLOCK.INFO', 'unconfirmed'), 'undone on the primary');
            $kept = new Client(Drivers::connect($driver, $primary), ['confirm_timeout_ms' => 100, 'on_confirm_failure' => 'warn', 'logger' => fn () => null]);
            $this->assertTrue($kept->lock('warned')->acquire(), "'warn' keeps it");
            $this->assertTrue((new Client(Drivers::connect($driver, $primary), ['confirm' => 'off']))->lock('off')->acquire());
            $topology->command(['op' => 'resume', 'port' => $replica]);
        } finally {
            $topology->stop();
        }
    }

    /** @dataProvider drivers */
    public function testSentinelNamesThePrimaryAndAConfirmedLockSurvivesAFailover(string $driver): void
    {
        $topology = new Topology('sentinel');
        try {
            $sentinels = array_map(fn ($s) => [$s['host'], $s['port']], $topology->description['sentinels']);
            $connect = fn () => $driver === 'phpredis'
                ? Client::fromSentinel($sentinels, 'rlock')
                : new Client(new \Predis\Client(array_map(fn ($s) => "tcp://{$s[0]}:{$s[1]}", $sentinels), ['replication' => 'sentinel', 'service' => 'rlock']));
            $client = $connect();
            $lock = $client->lock('orders');
            $this->assertTrue($lock->acquire(null));
            $after = $topology->command(['op' => 'failover', 'key' => 'orders']);
            $this->assertNotSame($topology->description['primary']['port'], $after['primary']['port']);
            $promoted = Drivers::connect('phpredis', $after['primary']['port']);
            $this->assertSame($lock->token(), Replies::map($promoted->rawCommand('RLOCK.INFO', 'orders'))['token'],
                'the promoted replica has the confirmed holding');

            $lock->refresh(); // on the old primary's connection: the session finds the new primary
            $this->assertTrue($lock->isHeld());
            $this->assertFalse($lock->isLost());
            $this->assertNotFalse(Replies::map($promoted->rawCommand('RLOCK.INFO', 'orders'))['watchdog'],
                're-bound to the connection to the new primary');
            $this->assertFalse($connect()->lock('orders', ['owner' => 'someone-else'])->acquire(), 'another owner is excluded there');
            $this->assertSame(0, $lock->release());
        } finally {
            $topology->stop();
        }
    }

    public function testClusterRoutesEachKeyToItsNode(): void
    {
        $topology = new Topology('cluster');
        try {
            $seeds = array_map(fn ($n) => "{$n['host']}:{$n['port']}", array_filter($topology->description['nodes'], fn ($n) => $n['role'] === 'primary'));
            $mine = new Client(new \RedisCluster(null, array_values($seeds), 5.0, 60.0));
            $theirs = new Client(new \Predis\Client(array_map(fn ($s) => "tcp://$s", array_values($seeds)), ['cluster' => 'redis']));
            $nodes = [];
            foreach (range(1, 12) as $i) {
                $lock = $mine->lock("job:$i");
                $this->assertTrue($lock->acquire(), "job:$i");
                $this->assertFalse($theirs->lock("job:$i")->acquire(), "job:$i excluded over Predis's cluster");
                $this->assertTrue($lock->isHeld());
                $this->assertSame(0, $lock->release());
                $this->assertTrue($theirs->lock("job:$i")->acquire(), "job:$i over Predis once free");
                $nodes[(new \RedisCluster(null, array_values($seeds)))->rawCommand("job:$i", 'CLUSTER', 'MYID')] = true;
            }
            $this->assertCount(3, $nodes, 'the keys spread over the three primaries');
            // Waits: phpredis's RedisCluster cannot lift its read timeout for one call, so a wait
            // that could outlast it is refused before it is sent; without one (0), it waits.
            $this->assertTrue($mine->lock('queue')->acquire());
            $short = new Client(new \RedisCluster(null, array_values($seeds), 5.0, 0.5));
            try {
                $short->lock('queue')->acquire(2.0);
                $this->fail('a wait longer than the read timeout was sent');
            } catch (\Rlock\Exception\InvalidArgumentException $e) {
                $this->assertStringContainsString('read_timeout 0', $e->getMessage());
            }
            $this->assertSame(0, (int) (Replies::map((new \RedisCluster(null, array_values($seeds)))->rawCommand('queue', 'RLOCK.INFO', 'queue'))['waiters'] ?? 0));
            foreach ([new \RedisCluster(null, array_values($seeds), 5.0, 0), new \Predis\Client(array_map(fn ($s) => "tcp://$s?read_write_timeout=0.5", array_values($seeds)), ['cluster' => 'redis'])] as $redis) {
                $started = microtime(true);
                $this->assertFalse((new Client($redis))->lock('queue')->acquire(1.0), get_class($redis));
                $this->assertGreaterThanOrEqual(0.99, microtime(true) - $started, get_class($redis) . ' waited in the queue');
            }
            $rw = $mine->readWriteLock('{doc}');
            $this->assertTrue($rw->readLock()->acquire());
            $semaphore = $mine->semaphore('{pool}');
            $this->assertTrue($semaphore->trySetPermits(1));
            $this->assertTrue($semaphore->acquire());
        } finally {
            $topology->stop();
        }
    }

    public function drivers(): array
    {
        return ['phpredis' => ['phpredis'], 'predis' => ['predis']];
    }
}
