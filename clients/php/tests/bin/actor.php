<?php

// One owner in a process of its own, driven by JSON lines on stdin (one reply line each on
// stdout): the other party of the tests (a holder to kill with -9, a waiter blocked in the server's
// queue) and an actor of the spec runner. PHP runs one request per process, so a second process
// is how a test gets a second, concurrent owner.
//
//   php actor.php --port P [--driver phpredis|predis] [--user U --password W] [--owner O]
//
// Ops: acquire, release, refresh, is_held, guard, set_permits, add_permits, available_permits,
// force_release, client_id. Replies {"ok":true,"result":...} or {"ok":false,"kind":K,"error":E}.

declare(strict_types=1);

require __DIR__ . '/../../bootstrap.php';

use Rlock\Tests\Support\Actor;

$options = getopt('', ['port:', 'driver::', 'user::', 'password::', 'owner::']);
$actor = new Actor(
    (int) $options['port'],
    $options['driver'] ?? 'phpredis',
    $options['user'] ?? null,
    $options['password'] ?? null,
    $options['owner'] ?? null,
);
fwrite(STDOUT, json_encode(['ready' => getmypid()]) . "\n");
while (($line = fgets(STDIN)) !== false) {
    if (trim($line) === '') {
        continue;
    }
    fwrite(STDOUT, json_encode($actor->run(json_decode($line, true, 512, JSON_THROW_ON_ERROR))) . "\n");
}
