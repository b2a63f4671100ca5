<?php

declare(strict_types=1);

namespace Rlock\Tests;

use PHPUnit\Framework\TestCase;
use Rlock\Tests\Spec\Runner;
use Rlock\Tests\Spec\Scenarios;
use Rlock\Tests\Support\RedisServer;
use Rlock\Tests\Support\Topology;

/**
 * The PHP runner of the shared scenarios (clients/spec): one test per scenario and driver,
 * `spec.<file>.<name> over <driver>`; scenarios of clients/spec/valid-fail (deliberately wrong
 * expectations) pass only by failing; a file newer than schemaVersion 1.0 is refused.
 */
final class SpecTest extends TestCase
{
    /** Scenarios where the PHP helper answers otherwise than the docs promise: name => reason. */
    private const KNOWN_DRIFTS = [
        'notify.waiters_block_no_connection' => 'PHP waits with a blocked WAIT on the process\'s own connection '
            . '(one request or worker, one connection, no event loop to read NOTIFY messages): blocked_clients counts the waiters',
    ];

    private static ?RedisServer $server = null;
    private static ?Topology $replicated = null;

    public static function tearDownAfterClass(): void
    {
        self::$server?->stop();
        self::$replicated?->stop();
        [self::$server, self::$replicated] = [null, null];
    }

    public function scenarios(): array
    {
        $cases = [];
        $drivers = getenv('SPEC_DRIVERS') ? explode(',', getenv('SPEC_DRIVERS')) : ['phpredis', 'predis'];
        foreach (['' => false, '/valid-fail' => true] as $dir => $mustFail) {
            if (!is_dir(Scenarios::directory() . $dir)) {
                continue;
            }
            foreach (Scenarios::load(Scenarios::directory() . $dir) as $name => $scenario) {
                if (getenv('SPEC_ONLY') && !str_starts_with($name, getenv('SPEC_ONLY'))) {
                    continue;
                }
                foreach ($drivers as $driver) {
                    $cases[($mustFail ? 'valid-fail.' : '') . "$name over $driver"] = [$name, $scenario, $driver, $mustFail];
                }
            }
        }
        return $cases;
    }

    /** @dataProvider scenarios */
    public function testScenario(string $name, array $scenario, string $driver, bool $mustFail): void
    {
        if (($why = Scenarios::unsupported($scenario)) !== null) {
            $this->markTestSkipped("SKIPPED $name: $why");
        }
        [$port, $topology] = ($scenario['topology'] ?? 'standalone') === 'replicated'
            ? [($t = self::replicated())->description['primary']['port'], $t]
            : [self::server()->port, null];
        $admin = new \Redis();
        $admin->connect('127.0.0.1', $port);
        $failure = null;
        try {
            (new Runner($admin, $port, $driver, $topology))->run($scenario);
        } catch (\RuntimeException $e) {
            $failure = $e;
        }
        if ($mustFail) {
            $this->assertNotNull($failure, "$name has deliberately wrong expectations but passed");
            return;
        }
        if (isset(self::KNOWN_DRIFTS[$name])) {
            $this->assertNotNull($failure, "$name passes now: remove it from KNOWN_DRIFTS");
            $this->markTestIncomplete("XFAIL $name: " . self::KNOWN_DRIFTS[$name]);
        }
        if ($failure !== null) {
            $this->fail("$name: {$failure->getMessage()}");
        }
        $this->addToAssertionCount(1);
    }

    public function testAFileNewerThanTheSupportedSchemaIsRefused(): void
    {
        $files = glob(Scenarios::directory() . '/invalid/*.json') ?: [];
        $written = tempnam(sys_get_temp_dir(), 'spec') . '.json';
        file_put_contents($written, json_encode(['schemaVersion' => '2.0', 'description' => 'newer', 'scenarios' => []]));
        $files[] = $written;
        try {
            foreach ($files as $file) {
                try {
                    Scenarios::read($file);
                    $this->fail("$file was accepted");
                } catch (\RuntimeException $e) {
                    $this->assertMatchesRegularExpression('/schemaVersion/', $e->getMessage());
                }
            }
        } finally {
            unlink($written);
        }
        $this->assertSame('1.0', Scenarios::read(Scenarios::directory() . '/lock.json')['schemaVersion']);
    }

    private static function server(): RedisServer
    {
        return self::$server ??= new RedisServer();
    }

    private static function replicated(): Topology
    {
        return self::$replicated ??= new Topology('replicated');
    }
}
