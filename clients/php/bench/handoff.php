<?php

// `make bench`'s PHP pair (bench-php, run by bench-pairs): the time from a release to the next
// waiter's hold, for Symfony Lock's own RedisStore (no BlockingStoreInterface: Lock::acquire(true)
// retries save() every 100 ± 10 ms) against RlockStore (waitAndSave waits in the server's queue),
// on one redis-server with the module, in the same run, the sides' rounds interleaved (the side
// that goes first alternates).
//
// A handoff: this process holds the lock; a forked waiter process calls acquire(true) through
// LockFactory and reports when it got it; after a random 50 to 350 ms (a random phase of
// Symfony's retry loop) this process releases; the figure is the waiter's hold time minus the
// moment just before release(). Each round takes BENCH_HANDOFFS handoffs and reports their
// median, p90 and max in ms. Writes target/bench-php.json (benches/pairs.py sets the pair side
// by side, with ratios) and prints each figure's median and range.
//
// Environment: BENCH_REPS (5), BENCH_HANDOFFS (20), RLOCK_MODULE.

declare(strict_types=1);

require __DIR__ . '/../bootstrap.php';

use Rlock\Symfony\RlockStore;
use Rlock\Tests\Support\RedisServer;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

$reps = (int) (getenv('BENCH_REPS') ?: 5);
$handoffs = (int) (getenv('BENCH_HANDOFFS') ?: 20);
$sides = [
    'rlock' => fn (\Redis $redis) => new RlockStore($redis),
    'symfony-redisstore' => fn (\Redis $redis) => new RedisStore($redis),
];

/** One handoff: ms from just before the holder's release to the waiter's hold. */
function handoff(callable $store, RedisServer $server, string $key): float
{
    $holder = (new LockFactory($store($server->connect())))->createLock($key);
    if (!$holder->acquire()) {
        throw new RuntimeException("$key: the holder did not get the free lock");
    }
    [$parentEnd, $childEnd] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pid = pcntl_fork();
    if ($pid === 0) {
        fclose($parentEnd);
        $waiter = (new LockFactory($store($server->connect())))->createLock($key);
        fwrite($childEnd, "waiting\n");
        $waiter->acquire(true);
        fwrite($childEnd, sprintf("%.6f\n", microtime(true)));
        $waiter->release();
        posix_kill(getmypid(), SIGKILL); // leave without the parent's shutdown functions
    }
    fclose($childEnd);
    if (trim((string) fgets($parentEnd)) !== 'waiting') {
        throw new RuntimeException('the waiter did not start');
    }
    if ($store($server->connect()) instanceof RlockStore) {
        // ours waits in the server's queue: see it there before the clock starts
        $admin = $server->connect();
        while ((int) (Rlock\Replies::map($admin->rawCommand('RWLOCK.INFO', $key))['waiting_writers'] ?? 0) !== 1) {
            usleep(1000);
        }
    }
    usleep(random_int(50000, 350000)); // the waiter is in acquire(true) by now, at a random phase
    $released = microtime(true);
    $holder->release();
    $held = (float) fgets($parentEnd);
    pcntl_waitpid($pid, $status);
    fclose($parentEnd);
    return ($held - $released) * 1000;
}

function percentile(array $values, float $p): float
{
    sort($values);
    return $values[(int) min(count($values) - 1, floor($p * count($values)))];
}

$server = new RedisServer();
try {
    $figures = [];
    $names = array_keys($sides);
    for ($rep = 0; $rep < $reps; $rep++) {
        foreach ($rep % 2 === 0 ? $names : array_reverse($names) as $name) {
            $times = [];
            for ($i = 0; $i < $handoffs; $i++) {
                $times[] = handoff($sides[$name], $server, "bench:$name:$rep:$i");
            }
            $prefix = "php.symfony-lock.$name.handoff";
            $figures["$prefix.median_ms"][] = percentile($times, 0.5);
            $figures["$prefix.p90_ms"][] = percentile($times, 0.9);
            $figures["$prefix.max_ms"][] = max($times);
        }
    }
    $admin = $server->connect();
    $meta = [
        'redis_version' => $admin->info('server')['redis_version'],
        'php_version' => PHP_VERSION,
        'phpredis_version' => phpversion('redis'),
        'symfony_lock' => 'Debian php-symfony-lock ' . trim((string) shell_exec("dpkg-query -W -f='\${Version}' php-symfony-lock 2>/dev/null")),
        'reps' => $reps,
        'handoffs_per_round' => $handoffs,
    ];
} finally {
    $server->stop();
}
$out = dirname(__DIR__, 3) . '/target/bench-php.json';
@mkdir(dirname($out), 0777, true);
file_put_contents($out, json_encode(['meta' => $meta, 'figures' => $figures], JSON_PRETTY_PRINT) . "\n");
printf("%-52s %10s   [min .. max] over %d rounds\n", 'figure', 'median', $reps);
foreach ($figures as $name => $values) {
    printf("%-52s %10.2f   [%.2f .. %.2f]\n", $name, percentile($values, 0.5), min($values), max($values));
}
echo "wrote $out\n";
