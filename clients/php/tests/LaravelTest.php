<?php

declare(strict_types=1);

namespace Rlock\Tests;

use Illuminate\Bus\UniqueLock;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Support\Facades\Cache;
use Rlock\Laravel\RlockLock;
use Rlock\Replies;
use Rlock\Tests\Support\LaravelApp;
use Rlock\Tests\Support\ServerTestCase;

/** The Laravel driver through the real Illuminate cache classes, the facade and queue middleware. */
final class LaravelTest extends ServerTestCase
{
    /** @dataProvider drivers */
    public function testCacheLockGetReleaseOwnerAndRestore(string $client): void
    {
        LaravelApp::boot(static::$server->port, $client);
        $lock = Cache::lock('invoices', 0, 'owner-1');
        $this->assertInstanceOf(RlockLock::class, $lock);
        $this->assertTrue($lock->get());
        $this->assertSame('owner-1', $lock->owner());
        $this->assertTrue($lock->isOwnedByCurrentProcess());
        $this->assertFalse(Cache::lock('invoices', 0)->get());
        $this->assertSame('owner-1', Replies::map(static::$server->admin('RLOCK.INFO', 'app:invoices'))['owner']);
        $this->assertTrue(Cache::restoreLock('invoices', 'owner-1')->isOwnedByCurrentProcess());
        $this->assertFalse(Cache::lock('invoices', 0, 'someone-else')->release(), "another owner's release frees nothing");
        $this->assertTrue(Cache::restoreLock('invoices', 'owner-1')->release());
        $this->assertFalse($lock->isOwnedByCurrentProcess());
        $this->assertSame(5, Cache::lock('x')->get(fn () => 5), 'get with a callback runs it and releases');
        $this->assertFalse(static::$server->admin('RLOCK.INFO', 'app:x'));
        $this->assertSame('v', Cache::remember('cached', 60, fn () => 'v'), 'the cache itself is unchanged');
    }

    /** @dataProvider drivers */
    public function testSecondsAreALeaseAndRefreshStartsItAgain(string $client): void
    {
        LaravelApp::boot(static::$server->port, $client);
        $lock = Cache::lock('leased', 10);
        $this->assertTrue($lock->get());
        $info = Replies::map(static::$server->admin('RLOCK.INFO', 'app:leased'));
        $this->assertFalse($info['watchdog']);
        $this->assertLessThanOrEqual(10000, $info['ttl']);
        $this->assertTrue($lock->refresh(100));
        $this->assertGreaterThan(10000, Replies::map(static::$server->admin('RLOCK.INFO', 'app:leased'))['ttl']);
        $lock->forceRelease();
        $this->assertFalse($lock->refresh(), 'a lock that is gone is not refreshed');
        $this->assertNotNull(Cache::lock('w')->get() ? Replies::map(static::$server->admin('RLOCK.INFO', 'app:w'))['watchdog'] : null);
    }

    /** @dataProvider drivers */
    public function testBlockWaitsInTheServerAndIsGrantedOnRelease(string $client): void
    {
        LaravelApp::boot(static::$server->port, $client);
        $holder = $this->actor($client);
        $holder->result(['op' => 'acquire', 'type' => 'lock', 'key' => 'app:report']);
        $started = microtime(true);
        try {
            Cache::lock('report', 10)->block(0.3);
            $this->fail('no LockTimeoutException');
        } catch (LockTimeoutException) {
        }
        $this->assertGreaterThanOrEqual(0.29, microtime(true) - $started);

        $pid = pcntl_fork();
        if ($pid === 0) {
            // Another process that lets the holder go once this one waits in the queue.
            $admin = static::$server->connect();
            while ((int) (Replies::map($admin->rawCommand('RLOCK.INFO', 'app:report'))['waiters'] ?? 0) !== 1) {
                usleep(2000);
            }
            $admin->rawCommand('RLOCK.FORCERELEASE', 'app:report');
            posix_kill(getmypid(), SIGKILL);
        }
        $this->assertSame('done', Cache::lock('report', 10)->block(30, fn () => 'done'));
        pcntl_waitpid($pid, $status);
        $this->assertFalse(static::$server->admin('RLOCK.INFO', 'app:report'), 'released after the callback');
    }

    /** @dataProvider drivers */
    public function testWithoutOverlappingRunByTwoWorkerProcesses(string $client): void
    {
        $first = $this->job($client);
        $this->assertArrayHasKey('running', $this->line($first));
        $second = $this->job($client);
        $this->assertSame(['released' => 5], $this->line($second), 'the overlapping run is released back, not run');
        fwrite($first['in'], "finish\n");
        $this->assertSame(['ran' => true], $this->line($first));
        $third = $this->job($client);
        $this->assertArrayHasKey('running', $this->line($third), 'free again after the first run');
        fwrite($third['in'], "finish\n");
        $this->assertSame(['ran' => true], $this->line($third));
        foreach ([$first, $second, $third] as $job) {
            proc_close($job['process']);
        }
    }

    /** @dataProvider drivers */
    public function testAWorkerKilledMidJobLetsTheNextRunInWithinASecond(string $client): void
    {
        $first = $this->job($client);
        $pid = $this->line($first)['running'];
        $lockKey = static::$server->admin('KEYS', 'app:laravel-queue-overlap:*')[0] ?? $this->fail('no overlap lock while the job runs');
        posix_kill($pid, SIGKILL);
        $this->awaitTrue(fn () => static::$server->admin('RLOCK.INFO', $lockKey) === false, 'the lock is free after the kill', 1.0);
        proc_close($first['process']);
        $next = $this->job($client);
        $this->assertArrayHasKey('running', $this->line($next), 'the next run is not released as overlapping');
        fwrite($next['in'], "finish\n");
        $this->assertSame(['ran' => true], $this->line($next));
        proc_close($next['process']);
    }

    public function testShouldBeUniqueLocksOutliveTheDispatchingProcess(): void
    {
        LaravelApp::boot(static::$server->port);
        $job = new class () implements \Illuminate\Contracts\Queue\ShouldBeUnique {
        };
        $pid = pcntl_fork();
        if ($pid === 0) {
            // The dispatching request: takes the unique lock (uniqueFor 0) and ends.
            LaravelApp::boot(static::$server->port);
            (new UniqueLock(Cache::store()))->acquire($job) ? exit(0) : exit(1);
        }
        pcntl_waitpid($pid, $status);
        $this->assertSame(0, pcntl_wexitstatus($status));
        $this->assertFalse((new UniqueLock(Cache::store()))->acquire($job), 'still unique after the dispatcher ended');
        // What CallQueuedHandler does once the job ran:
        Cache::lock('laravel_unique_job:' . get_class($job))->forceRelease();
        $this->assertTrue((new UniqueLock(Cache::store()))->acquire($job));
    }

    /** @return array{process: resource, in: resource, out: resource} */
    private function job(string $client): array
    {
        $process = proc_open(
            [PHP_BINARY, __DIR__ . '/bin/laravel-job.php', '--port=' . static::$server->port, "--client=$client"],
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR],
            $pipes
        );
        return ['process' => $process, 'in' => $pipes[0], 'out' => $pipes[1]];
    }

    private function line(array $job): array
    {
        $read = [$job['out']];
        $none = null;
        if (stream_select($read, $none, $none, 60) < 1) {
            $this->fail('the job process did not answer within 60 s');
        }
        return json_decode((string) fgets($job['out']), true) ?? $this->fail('the job process ended without a line');
    }
}
