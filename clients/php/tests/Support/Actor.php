<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

use Rlock\Client;
use Rlock\Exception\DeadlockException;
use Rlock\Exception\NotConfirmedException;
use Rlock\Exception\NotHeldException;
use Rlock\Exception\UpgradeRefusedException;
use Rlock\Exception\WrongTypeException;
use Rlock\Holding;

/** The ops an actor process (tests/bin/actor.php) runs through the public API, one owner for all. */
final class Actor
{
    /** @var array<string, Client> by confirm setting */
    private array $clients = [];
    /** @var array<string, Holding|\Rlock\ReadWriteLock> by type and key */
    private array $handles = [];
    private \Redis|\Predis\Client $redis;

    public function __construct(int $port, string $driver, ?string $user, ?string $password, private ?string $owner)
    {
        $this->redis = Drivers::connect($driver, $port, $user, $password);
        $this->owner ??= 'actor-' . getmypid();
    }

    public function run(array $step): array
    {
        try {
            return ['ok' => true, 'result' => $this->op($step)];
        } catch (\Throwable $e) {
            return ['ok' => false, 'kind' => self::kind($e), 'error' => get_class($e) . ': ' . $e->getMessage()];
        }
    }

    private function op(array $s): mixed
    {
        return match ($s['op']) {
            'acquire' => $this->acquire($s),
            'release' => $s['type'] === 'semaphore'
                ? $this->handle($s)->release($s['permits'] ?? 1) : $this->handle($s)->release(),
            'refresh' => $this->handle($s)->refresh(isset($s['lease_ms']) ? $s['lease_ms'] / 1000 : null),
            'is_held' => $this->handle($s)->isHeld(),
            'guard' => $this->handle(['type' => 'lock'] + $s)->guard(...$s['command']),
            'set_permits' => $this->semaphore($s)->trySetPermits($s['permits']),
            'add_permits' => $this->semaphore($s)->addPermits($s['permits']),
            'available_permits' => $this->semaphore($s)->availablePermits(),
            'force_release' => $this->handle($s)->forceRelease(),
            'client_id' => $this->redis instanceof \Redis ? $this->redis->rawCommand('CLIENT', 'ID') : $this->redis->executeRaw(['CLIENT', 'ID']),
            'await_lost' => $this->awaitLost($s),
            default => throw new \InvalidArgumentException("unknown actor op '{$s['op']}'"),
        };
    }

    private function acquire(array $s): int
    {
        $wait = array_key_exists('wait_ms', $s) ? ($s['wait_ms'] === null ? null : $s['wait_ms'] / 1000) : 0.0;
        $handle = $this->handle($s);
        $granted = $s['type'] === 'semaphore' ? $handle->acquire($s['permits'] ?? 1, $wait) : $handle->acquire($wait);
        if (!$granted) {
            throw new NotAcquired('not granted');
        }
        return $handle->token();
    }

    /** Polls isHeld() (PHP finds a loss when it asks) until it is false, within `within_ms`. */
    private function awaitLost(array $s): null
    {
        $handle = $this->handle($s);
        $deadline = microtime(true) + ($s['within_ms'] ?? 5000) / 1000;
        while ($handle->isHeld()) {
            if (microtime(true) > $deadline) {
                throw new \RuntimeException('still held after ' . ($s['within_ms'] ?? 5000) . ' ms');
            }
            usleep(5000);
        }
        return null;
    }

    private function semaphore(array $s): \Rlock\Semaphore
    {
        return $this->handle(['type' => 'semaphore'] + $s);
    }

    private function handle(array $s): Holding
    {
        $type = $s['type'];
        $id = in_array($type, ['read', 'write'], true) ? "rw\0{$s['key']}" : "$type\0{$s['key']}";
        $options = ['lease' => isset($s['lease_ms']) ? $s['lease_ms'] / 1000 : null];
        $handle = $this->handles[$id] ??= match ($type) {
            'lock' => $this->client($s)->lock($s['key'], $options),
            'read', 'write' => $this->client($s)->readWriteLock($s['key'], $options),
            'semaphore' => $this->client($s)->semaphore($s['key'], $options),
            default => throw new \InvalidArgumentException("unknown type '$type'"),
        };
        return match ($type) {
            'read' => $handle->readLock(),
            'write' => $handle->writeLock(),
            default => $handle,
        };
    }

    private function client(array $s): Client
    {
        $confirm = $s['confirm'] ?? null;
        $options = ['owner' => $this->owner];
        if ($confirm !== null) {
            $options += ['confirm' => $confirm['replicas'], 'confirm_timeout_ms' => $confirm['timeout_ms']];
        }
        return $this->clients[json_encode($confirm)] ??= new Client($this->redis, $options);
    }

    public static function kind(\Throwable $e): string
    {
        return match (true) {
            $e instanceof NotAcquired => 'NotAcquired',
            $e instanceof NotHeldException => 'NotHeld',
            $e instanceof DeadlockException => 'Deadlock',
            $e instanceof UpgradeRefusedException => 'UpgradeRefused',
            $e instanceof WrongTypeException => 'WrongType',
            $e instanceof NotConfirmedException => 'NotConfirmed',
            default => 'Error',
        };
    }
}
