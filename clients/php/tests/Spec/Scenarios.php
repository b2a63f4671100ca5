<?php

declare(strict_types=1);

namespace Rlock\Tests\Spec;

/**
 * The scenario files of clients/spec: read, version-checked (this runner supports schemaVersion
 * 1.0 and refuses a newer one loudly), and what a scenario needs that this helper lacks.
 */
final class Scenarios
{
    public const SUPPORTED_VERSION = [1, 0];
    /** Capabilities of the PHP helper (clients/spec/README.md "requires"). */
    public const SUPPORTED = ['confirmation'];
    /** Ops of types the PHP helper does not have: the scenario is skipped, saying which. */
    public const MISSING_TYPES = [
        'set_count' => 'CountDownLatch', 'count_down' => 'CountDownLatch', 'get_count' => 'CountDownLatch', 'await_latch' => 'CountDownLatch',
        'acquire_all' => 'MultiLock', 'release_all' => 'MultiLock',
        'campaign' => 'Election', 'leader' => 'Election', 'resign' => 'Election',
    ];

    public static function directory(): string
    {
        return dirname(__DIR__, 4) . '/clients/spec';
    }

    /** @return array<string, array> scenario name => scenario, of every file in `$directory` */
    public static function load(string $directory): array
    {
        $all = [];
        foreach (glob("$directory/*.json") as $file) {
            if (basename($file) === 'schema.json') {
                continue;
            }
            $document = self::read($file);
            foreach ($document['scenarios'] as $scenario) {
                $all[basename($file, '.json') . '.' . $scenario['name']] = $scenario;
            }
        }
        ksort($all);
        return $all;
    }

    /** A scenario file, refused when its schemaVersion is missing, unreadable or newer than this runner supports. */
    public static function read(string $file): array
    {
        $document = json_decode((string) file_get_contents($file), true, 512, JSON_THROW_ON_ERROR);
        // CONTRACT.md R1.2: a file without a schemaVersion is refused, never guessed.
        if (!array_key_exists('schemaVersion', $document)) {
            throw new \RuntimeException("$file: no schemaVersion (CONTRACT.md R1.2)");
        }
        $version = $document['schemaVersion'];
        if (!is_string($version) || !preg_match('/^(\d+)\.(\d+)$/', $version, $m)) {
            throw new \RuntimeException("$file: schemaVersion must be a string \"major.minor\", not " . json_encode($version));
        }
        if ([(int) $m[1], (int) $m[2]] > self::SUPPORTED_VERSION) {
            throw new \RuntimeException(sprintf('%s: schemaVersion %s is newer than this runner supports (%d.%d)', $file, $version, ...self::SUPPORTED_VERSION));
        }
        return $document;
    }

    /** Why this helper cannot run the scenario, or null. */
    public static function unsupported(array $scenario): ?string
    {
        foreach ($scenario['requires'] ?? [] as $capability) {
            if (!in_array($capability, self::SUPPORTED, true)) {
                return "requires '$capability', which the PHP helper does not support"
                    . ($capability === 'cancel' ? ' (a blocked wait in PHP cannot be given up from outside)' : '');
            }
        }
        foreach ($scenario['steps'] as $step) {
            if (isset(self::MISSING_TYPES[$step['op']])) {
                return "uses '{$step['op']}': the PHP helper has no " . self::MISSING_TYPES[$step['op']];
            }
            if ($step['op'] === 'await_lost' && !in_array($step['type'], ['lock', 'read', 'write', 'semaphore'], true)) {
                return "awaits a lost {$step['type']}: the PHP helper has no such type";
            }
        }
        return null;
    }
}
