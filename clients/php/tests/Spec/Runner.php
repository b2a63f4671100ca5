<?php

declare(strict_types=1);

namespace Rlock\Tests\Spec;

use Rlock\Replies;
use Rlock\Tests\Support\ActorProcess;
use Rlock\Tests\Support\Topology;

/**
 * Runs one clients/spec scenario: each actor is a PHP process of its own (tests/bin/actor.php,
 * one owner, its own connection as its own ACL user), which is what one PHP request or worker is;
 * a background step is a step sent to an actor whose reply is read at its `join`. Throws
 * \RuntimeException naming the step when the scenario fails.
 */
final class Runner
{
    private const ACTOR_OPS = ['acquire', 'release', 'guard', 'await_lost', 'set_permits', 'add_permits', 'available_permits'];
    private const STEP_FIELDS = ['op', 'actor', 'type', 'key', 'keys', 'permits', 'wait_ms', 'lease_ms', 'confirm', 'command', 'count',
        'candidate', 'name', 'ms', 'expect', 'error', 'save', 'within_ms', 'after_ms', 'background'];
    private const KINDS = ['NotAcquired', 'NotHeld', 'Deadlock', 'UpgradeRefused', 'WrongType', 'NotConfirmed'];

    private static int $serial = 0;
    /** @var array<string, ActorProcess> */
    private array $actors = [];
    /** @var array<string, string> actor => ACL user */
    private array $users = [];
    /** @var array<string, array{actor: string, started: float}> */
    private array $background = [];
    private array $saved = [];
    private Matcher $matcher;

    /** @param int $port the primary (standalone: the one server) */
    public function __construct(private \Redis $admin, private int $port, private string $driver, private ?Topology $topology = null)
    {
        $this->matcher = new Matcher($this->saved);
    }

    public function run(array $scenario): void
    {
        $this->admin->rawCommand('FLUSHALL');
        foreach ($scenario['server_config'] ?? [] as $name => $value) {
            $this->admin->rawCommand('CONFIG', 'SET', $name, (string) $value);
        }
        $serial = ++self::$serial;
        try {
            foreach ($scenario['actors'] ?? [] as $actor) {
                $user = "spec-php-$serial-$actor";
                $this->admin->rawCommand('ACL', 'SETUSER', $user, 'reset', 'on', '>spec', '~*', '&*', '+@all');
                $this->users[$actor] = $user;
                $this->actors[$actor] = new ActorProcess($this->port, $this->driver, $user, 'spec', "spec-php-$serial-$actor-owner");
            }
            foreach ($scenario['steps'] as $index => $step) {
                try {
                    $this->step($step);
                } catch (\Throwable $e) {
                    throw new \RuntimeException("step $index ({$step['op']}" . (isset($step['actor']) ? " {$step['actor']}" : '') . "): {$e->getMessage()}", 0, $e);
                }
            }
        } finally {
            foreach ($this->actors as $actor) {
                $actor->close();
            }
            foreach ($this->users as $user) {
                $this->admin->rawCommand('ACL', 'DELUSER', $user);
            }
        }
    }

    private function step(array $step): void
    {
        $unknown = array_diff(array_keys($step), self::STEP_FIELDS);
        if ($unknown !== []) {
            throw new \RuntimeException('unknown field(s) ' . implode(', ', $unknown));
        }
        if (isset($step['error']) && !in_array($step['error'], self::KINDS, true)) {
            throw new \RuntimeException("unknown error kind '{$step['error']}'");
        }
        $started = microtime(true);
        if (isset($step['background'])) {
            $this->actor($step)->start($this->actorStep($step));
            $this->background[$step['background']] = ['actor' => $step['actor'], 'started' => $started];
            return;
        }
        $op = $step['op'];
        if (in_array($op, self::ACTOR_OPS, true)) {
            $reply = $this->actor($step)->call($this->actorStep($step));
            $this->check($step, $reply, $started, $started);
            return;
        }
        $result = match ($op) {
            'join' => null,
            'admin' => self::decode($this->admin->rawCommand(...$this->matcher->substitute($step['command'])), $step['command'][0]),
            'await_waiters' => $this->awaitWaiters($step),
            'kill_connection' => $this->killConnections($step),
            'crash' => $this->crash($step),
            'sleep' => $this->sleep($step),
            'pause_replicas', 'resume_replicas' => $this->replicas($op === 'pause_replicas'),
            default => throw new \RuntimeException("unknown op '$op'"),
        };
        if ($op === 'join') {
            $background = $this->background[$step['name']] ?? throw new \RuntimeException("no background step '{$step['name']}'");
            unset($this->background[$step['name']]);
            $reply = $this->actors[$background['actor']]->join(120.0);
            $this->check($step, $reply, $started, $background['started']);
            return;
        }
        $this->check($step, ['ok' => true, 'result' => $result], $started, $started);
    }

    /** An actor step as the actor process takes it: the API's fields, wait_ms null kept apart from absent. */
    private function actorStep(array $step): array
    {
        return array_intersect_key($step, array_flip(['op', 'type', 'key', 'permits', 'wait_ms', 'lease_ms', 'confirm', 'command', 'within_ms']));
    }

    private function check(array $step, array $reply, float $started, float $backgroundStarted): void
    {
        $elapsedMs = (microtime(true) - $started) * 1000;
        $sinceBackgroundMs = (microtime(true) - $backgroundStarted) * 1000;
        if (isset($step['error'])) {
            if ($reply['ok']) {
                throw new \RuntimeException("expected {$step['error']}, got the result " . json_encode($reply['result']));
            }
            if ($reply['kind'] !== $step['error']) {
                throw new \RuntimeException("expected {$step['error']}, got {$reply['kind']}: {$reply['error']}");
            }
        } elseif (!$reply['ok']) {
            throw new \RuntimeException("failed: {$reply['kind']}: {$reply['error']}");
        } elseif (array_key_exists('expect', $step) && ($why = $this->matcher->mismatch($step['expect'], $reply['result'])) !== null) {
            throw new \RuntimeException($why);
        }
        if (isset($step['within_ms']) && $step['op'] !== 'await_lost' && $elapsedMs > $step['within_ms']) {
            throw new \RuntimeException(sprintf('took %.0f ms, more than within_ms %d', $elapsedMs, $step['within_ms']));
        }
        if (isset($step['after_ms']) && $sinceBackgroundMs < $step['after_ms']) {
            throw new \RuntimeException(sprintf('took %.0f ms, less than after_ms %d', $sinceBackgroundMs, $step['after_ms']));
        }
        if (isset($step['save'])) {
            $this->saved[$step['save']] = $reply['ok'] ? $reply['result'] : null;
        }
    }

    private function awaitWaiters(array $step): null
    {
        $deadline = microtime(true) + ($step['within_ms'] ?? 5000) / 1000;
        while (($count = $this->waiters($step['type'], $step['key'] ?? null)) !== $step['count']) {
            if (microtime(true) > $deadline) {
                throw new \RuntimeException("{$count} waiters, not {$step['count']}, after " . ($step['within_ms'] ?? 5000) . ' ms');
            }
            usleep(3000);
        }
        return null;
    }

    private function waiters(string $type, ?string $key): int
    {
        if ($type === 'server') {
            return (int) ($this->admin->info('rlock')['rlock_waiters'] ?? 0);
        }
        $command = ['lock' => 'RLOCK.INFO', 'rwlock' => 'RWLOCK.INFO', 'semaphore' => 'RSEM.INFO'][$type]
            ?? throw new \RuntimeException("unknown await_waiters type '$type'");
        $info = Replies::map($this->admin->rawCommand($command, $key));
        return match ($type) {
            'lock' => (int) ($info['waiters'] ?? 0),
            'rwlock' => (int) ($info['waiting_readers'] ?? 0) + (int) ($info['waiting_writers'] ?? 0),
            'semaphore' => count($info['waiters'] ?? []),
        };
    }

    /** The server closes every connection of the actor; the actor lives on and may reconnect. */
    private function killConnections(array $step): null
    {
        $this->admin->rawCommand('CLIENT', 'KILL', 'USER', $this->user($step));
        return null;
    }

    /** Only in scenarios about time (a lease running out), never to synchronise. */
    private function sleep(array $step): null
    {
        usleep((int) ($step['ms'] * 1000));
        return null;
    }

    /** The actor's process is gone: its user disabled (no reconnecting), its connections closed, the process killed. */
    private function crash(array $step): null
    {
        $user = $this->user($step);
        $this->admin->rawCommand('ACL', 'SETUSER', $user, 'off');
        $this->admin->rawCommand('CLIENT', 'KILL', 'USER', $user);
        $this->actors[$step['actor']]->kill();
        return null;
    }

    private function replicas(bool $pause): null
    {
        if ($this->topology === null) {
            throw new \RuntimeException('pause_replicas and resume_replicas need the replicated topology');
        }
        foreach ($this->topology->description['replicas'] as $replica) {
            $this->topology->command(['op' => $pause ? 'pause' : 'resume', 'port' => $replica['port']]);
        }
        return null;
    }

    private function actor(array $step): ActorProcess
    {
        return $this->actors[$step['actor'] ?? ''] ?? throw new \RuntimeException('undeclared actor ' . json_encode($step['actor'] ?? null));
    }

    private function user(array $step): string
    {
        return $this->users[$step['actor'] ?? ''] ?? throw new \RuntimeException('undeclared actor ' . json_encode($step['actor'] ?? null));
    }

    /** A phpredis (RESP2) reply as the spec's admin reads it: nil null, +OK "OK", INFO parsed. */
    private static function decode(mixed $reply, string $command): mixed
    {
        if ($reply === false) {
            return null;
        }
        if ($reply === true) {
            return 'OK';
        }
        if (strtoupper($command) === 'INFO' && is_string($reply)) {
            $info = [];
            foreach (preg_split('/\r?\n/', $reply) as $line) {
                if ($line !== '' && $line[0] !== '#' && str_contains($line, ':')) {
                    [$field, $value] = explode(':', $line, 2);
                    $info[$field] = preg_match('/^-?\d+$/', $value) ? (int) $value : $value;
                }
            }
            return $info;
        }
        return $reply;
    }
}
