<?php

declare(strict_types=1);

namespace Rlock\Tests;

use Rlock\Tests\Support\ServerTestCase;

/**
 * What PHP processes need: a process killed with -9 while holding (no shutdown code runs) frees
 * its lock at once through the server's watchdog on its connection; a lease (for `pconnect`)
 * instead keeps it until the lease ends.
 */
final class ProcessTest extends ServerTestCase
{
    public function typesAndDrivers(): array
    {
        $cases = [];
        foreach (['phpredis', 'predis'] as $driver) {
            foreach ([['lock', 'RLOCK.INFO'], ['write', 'RWLOCK.INFO'], ['read', 'RWLOCK.INFO'], ['semaphore', 'RSEM.INFO']] as [$type, $info]) {
                $cases["$type over $driver"] = [$driver, $type, $info];
            }
        }
        return $cases;
    }

    /** @dataProvider typesAndDrivers */
    public function testAHolderKilledWithSignal9LetsTheNextWaiterInWithinASecond(string $driver, string $type, string $info): void
    {
        $step = ['type' => $type, 'key' => 'job'];
        $holder = $this->actor($driver);
        $waiter = $this->actor($driver);
        if ($type === 'semaphore') {
            $holder->result(['op' => 'set_permits', 'key' => 'job', 'permits' => 1]);
        }
        $holder->result(['op' => 'acquire'] + $step);
        $waiter->start(['op' => 'acquire', 'wait_ms' => 60000] + ($type === 'read' ? ['type' => 'write', 'key' => 'job'] : $step));
        $this->awaitTrue(fn () => $this->queued('job', $info) === 1, 'the waiter is queued');

        $killed = microtime(true);
        $holder->kill();
        $reply = $waiter->join(30.0);
        $elapsed = microtime(true) - $killed;

        $this->assertTrue($reply['ok'], json_encode($reply));
        $this->assertLessThan(1.0, $elapsed, "the waiter got it {$elapsed} s after the kill");
    }

    /** @dataProvider drivers */
    public function testAWaiterWhoseConnectionDropsWaitsAgainOnANewOneAndHoldsThere(string $driver): void
    {
        [$holder, $waiter] = $this->heldWithAWaiter($driver, 'k');
        $blocked = array_values(array_filter(explode("\n", (string) static::$server->admin('CLIENT', 'LIST')), fn ($line) => str_contains($line, 'cmd=rlock.acquire') && preg_match('/flags=\S*b/', $line)));
        $this->assertCount(1, $blocked, 'one blocked client');
        preg_match('/^id=(\d+)/', $blocked[0], $m);
        static::$server->admin('CLIENT', 'KILL', 'ID', $m[1]);
        $this->awaitTrue(fn () => $this->waiters('k') === 1 && !str_contains((string) static::$server->admin('CLIENT', 'LIST'), "id={$m[1]} "), 'the wait was sent again on a new connection');
        $this->assertSame(0, $holder->release());
        $reply = $waiter->join();
        $this->assertTrue($reply['ok'], json_encode($reply));
        $info = \Rlock\Replies::map(static::$server->admin('RLOCK.INFO', 'k'));
        $this->assertSame($reply['result'], $info['token']);
        $this->assertSame($waiter->result(['op' => 'client_id']), $info['watchdog'], 'bound to the new connection');
    }

    public function testALeaseHoldingOutlivesItsKilledProcessUntilTheLeaseEnds(): void
    {
        $holder = $this->actor();
        $holder->result(['op' => 'acquire', 'type' => 'lock', 'key' => 'k', 'lease_ms' => 60000]);
        $id = $holder->result(['op' => 'client_id']);
        $holder->kill();
        // The server sees the connection close; a lease holding is not bound to it.
        $this->awaitTrue(fn () => !str_contains((string) static::$server->admin('CLIENT', 'LIST'), "id=$id "), 'the connection is gone');
        $this->assertGreaterThan(30000, \Rlock\Replies::map(static::$server->admin('RLOCK.INFO', 'k'))['ttl']);
    }

    private function queued(string $key, string $info): int
    {
        $reply = \Rlock\Replies::map(static::$server->admin($info, $key));
        return match ($info) {
            'RSEM.INFO' => count($reply['waiters'] ?? []),
            'RWLOCK.INFO' => (int) ($reply['waiting_readers'] ?? 0) + (int) ($reply['waiting_writers'] ?? 0),
            default => (int) ($reply['waiters'] ?? 0),
        };
    }
}
