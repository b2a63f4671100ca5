<?php

declare(strict_types=1);

namespace Rlock\Symfony;

use Rlock\Client;
use Rlock\Exception\LockException;
use Rlock\Exception\NotHeldException;
use Rlock\Semaphore;
use Symfony\Component\Semaphore\Exception\InvalidArgumentException;
use Symfony\Component\Semaphore\Exception\SemaphoreAcquiringException;
use Symfony\Component\Semaphore\Exception\SemaphoreExpiredException;
use Symfony\Component\Semaphore\Exception\SemaphoreReleasingException;
use Symfony\Component\Semaphore\Key;
use Symfony\Component\Semaphore\PersistingStoreInterface;

/**
 * A symfony/semaphore store on rlock's owned semaphore (`RSEM.*`): the Key's limit sets the
 * permits the first time (`RSEM.SETPERMITS`: later limits do not change it), its weight is the
 * permits taken. Each Key is its own owner. `$watchdog` (default true): the permits come back the
 * moment this process's connection ends; false: a lease of each call's TTL, as Symfony's stores.
 */
final class RlockSemaphoreStore implements PersistingStoreInterface
{
    private const STATE = 'rlock.owner';

    private readonly Client $client;
    /** @var array<string, Semaphore> */
    private array $semaphores = [];

    public function __construct(\Redis|\RedisCluster|\Predis\ClientInterface|Client $redis, private readonly bool $watchdog = true, array $clientOptions = [])
    {
        $this->client = $redis instanceof Client ? $redis : new Client($redis, $clientOptions);
    }

    public function save(Key $key, float $ttlInSecond)
    {
        self::checkTtl($ttlInSecond);
        $semaphore = $this->semaphore($key, $ttlInSecond);
        try {
            if ($semaphore->isHeld()) {
                $semaphore->refresh($this->watchdog ? null : $ttlInSecond);
                return;
            }
            $semaphore->trySetPermits($key->getLimit());
            $granted = $semaphore->acquire($key->getWeight());
        } catch (LockException $e) {
            throw new SemaphoreAcquiringException($key, $e->getMessage());
        }
        if (!$granted) {
            throw new SemaphoreAcquiringException($key, 'no permits left');
        }
    }

    public function putOffExpiration(Key $key, float $ttlInSecond)
    {
        self::checkTtl($ttlInSecond);
        try {
            $this->semaphore($key, $ttlInSecond)->refresh($ttlInSecond);
        } catch (NotHeldException) {
            throw new SemaphoreExpiredException($key, 'its permits are not held any more');
        } catch (LockException $e) {
            throw new SemaphoreExpiredException($key, $e->getMessage());
        }
    }

    public function delete(Key $key)
    {
        $semaphore = $this->semaphore($key, null);
        try {
            $semaphore->release($key->getWeight());
        } catch (NotHeldException) {
            // nothing held: nothing to give back
        } catch (LockException $e) {
            throw new SemaphoreReleasingException($key, $e->getMessage());
        }
        unset($this->semaphores[$this->id($key)]);
    }

    public function exists(Key $key): bool
    {
        return $this->semaphore($key, null)->isHeld();
    }

    private function semaphore(Key $key, ?float $ttl): Semaphore
    {
        if (!$key->hasState(self::STATE)) {
            $key->setState(self::STATE, bin2hex(random_bytes(12)));
        }
        return $this->semaphores[$this->id($key)] ??= $this->client->semaphore((string) $key, [
            'owner' => $key->getState(self::STATE),
            'lease' => $this->watchdog ? null : ($ttl ?? 300.0),
        ]);
    }

    private function id(Key $key): string
    {
        return $key->getState(self::STATE) . "\0" . $key;
    }

    private static function checkTtl(float $ttl): void
    {
        if ($ttl <= 0) {
            throw new InvalidArgumentException("The TTL should be greater than 0, '$ttl' given.");
        }
    }
}
