<?php

// A queue worker's run of one job through Laravel's WithoutOverlapping middleware, in a process of
// its own: prints {"running":pid} when the job body starts and waits for a line on stdin before
// it ends; prints {"ran":true} after, or {"released":delay} when the middleware found the job
// overlapping and released it back to the queue without running it.
//
//   php laravel-job.php --port P [--client phpredis|predis] [--key K]

declare(strict_types=1);

require __DIR__ . '/../../bootstrap.php';

use Illuminate\Queue\Middleware\WithoutOverlapping;
use Rlock\Tests\Support\LaravelApp;

$options = getopt('', ['port:', 'client::', 'key::']);
LaravelApp::boot((int) $options['port'], $options['client'] ?? 'phpredis');

final class ReportJob
{
    public ?int $releasedWith = null;

    public function release(int $delay = 0): void
    {
        $this->releasedWith = $delay;
    }
}

$job = new ReportJob();
$ran = false;
(new WithoutOverlapping($options['key'] ?? 'daily', 5))->handle($job, function () use (&$ran) {
    fwrite(STDOUT, json_encode(['running' => getmypid()]) . "\n");
    fgets(STDIN);
    $ran = true;
});
fwrite(STDOUT, json_encode($ran ? ['ran' => true] : ['released' => $job->releasedWith]) . "\n");
