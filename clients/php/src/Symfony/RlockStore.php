<?php

declare(strict_types=1);

namespace Rlock\Symfony;

use Rlock\Client;
use Rlock\Exception\LockException;
use Rlock\Exception\NotHeldException;
use Rlock\ReadWriteLock;
use Symfony\Component\Lock\BlockingSharedLockStoreInterface;
use Symfony\Component\Lock\BlockingStoreInterface;
use Symfony\Component\Lock\Exception\InvalidTtlException;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockStorageException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\Store\ExpiringStoreTrait;

/**
 * A Symfony Lock store on rlock's read-write lock (`RWLOCK.*`): `save` takes the write side,
 * `saveRead` the read side, and `waitAndSave` / `waitAndSaveRead` wait in the server's FIFO queue
 * (the connection blocked until the grant: no retry loop), so `LockFactory::createLock($r)->acquire(true)`
 * and `->acquireRead(true)` block without polling.
 *
 * Each Key is its own owner (a random id in its state), so two Lock objects exclude each other as
 * with Symfony's RedisStore. `$watchdog` (default true): holdings are bound to this process's
 * connection and end the moment it ends or dies; the Key is then unserializable (the lock cannot
 * move to another process) and a TTL does not end it while the process lives (putOffExpiration
 * still checks that it is held). `$watchdog = false`: Symfony's TTL semantics exactly (a `PX`
 * lease of `$initialTtl`, then of each putOffExpiration); use this with persistent connections.
 */
final class RlockStore implements BlockingStoreInterface, BlockingSharedLockStoreInterface
{
    use ExpiringStoreTrait; // checkNotExpired(): a Key past its lifetime is deleted, LockExpiredException

    private const STATE = 'rlock.owner';

    private readonly Client $client;
    /** @var array<string, ReadWriteLock> by resource and owner */
    private array $locks = [];

    public function __construct(
        \Redis|\RedisCluster|\Predis\ClientInterface|Client $redis,
        private readonly float $initialTtl = 300.0,
        private readonly bool $watchdog = true,
        array $clientOptions = [],
    ) {
        if ($initialTtl <= 0) {
            throw new InvalidTtlException(sprintf('"%s()" expects a strictly positive TTL. Got %s.', __METHOD__, $initialTtl));
        }
        $this->client = $redis instanceof Client ? $redis : new Client($redis, $clientOptions);
    }

    public function save(Key $key)
    {
        $this->take($key, false, 0.0);
    }

    public function waitAndSave(Key $key)
    {
        $this->take($key, false, null);
    }

    public function saveRead(Key $key)
    {
        $this->take($key, true, 0.0);
    }

    public function waitAndSaveRead(Key $key)
    {
        $this->take($key, true, null);
    }

    public function putOffExpiration(Key $key, float $ttl)
    {
        if ($ttl <= 0) {
            throw new InvalidTtlException(sprintf('"%s()" expects a TTL greater than 0. Got %s.', __METHOD__, $ttl));
        }
        // The lifetime starts before the request, as in Symfony's stores: a TTL shorter than the
        // round trip has run out by the time the server answers.
        $key->reduceLifetime($ttl);
        $lock = $this->lock($key);
        $this->storage(function () use ($lock, $ttl) {
            try {
                // RWLOCK.RENEW: every holding of this owner; a watchdog holding keeps the
                // watchdog's lease (the TTL is Symfony's own clock), a lease becomes $ttl (whole ms)
                $lock->writeLock()->refresh($this->watchdog ? null : max(1.0, ceil($ttl * 1000)) / 1000);
            } catch (NotHeldException) {
                throw new LockConflictedException();
            }
        });
        $this->checkNotExpired($key);
    }

    public function delete(Key $key)
    {
        $lock = $this->lock($key);
        $this->storage(function () use ($lock) {
            foreach ([$lock->writeLock(), $lock->readLock()] as $side) {
                try {
                    while ($side->release() > 0) {
                    }
                } catch (NotHeldException) {
                    // not held on this side (or not any more): nothing to give back, as with Symfony's stores
                }
            }
        });
        unset($this->locks[$this->id($key)]);
    }

    public function exists(Key $key)
    {
        $lock = $this->lock($key);
        return $this->storage(fn () => $lock->writeLock()->isHeld() || $lock->readLock()->isHeld());
    }

    /**
     * Takes one side, once per Key: saving a Key that holds that side again only refreshes it. A
     * Key holding the write side that asks to read keeps a read hold and gives up the write side
     * (the server's downgrade); one holding the read side that asks to write gives up its read
     * hold first, then asks, when no other Key reads (not atomic, unlike Symfony's RedisStore: a
     * writer or reader of another process may come in between, and then the Key holds nothing).
     */
    private function take(Key $key, bool $read, ?float $wait): void
    {
        $this->checkNotExpired($key);
        if (!$this->watchdog && $wait === 0.0) {
            $key->reduceLifetime($this->initialTtl); // before the request, as in Symfony's stores
        }
        $lock = $this->lock($key);
        [$side, $other] = $read ? [$lock->readLock(), $lock->writeLock()] : [$lock->writeLock(), $lock->readLock()];
        $granted = $this->storage(function () use ($side, $other, $read, $wait) {
            if ($side->isHeld()) {
                $side->refresh($this->watchdog ? null : $this->initialTtl);
                return true;
            }
            $holdsOther = $other->isHeld();
            if ($holdsOther && !$read) {
                if ($wait !== null && $this->otherHolders($side) > 0) {
                    return false; // other readers: a promotion cannot be granted now
                }
                $other->release();
            }
            $granted = $side->acquire($wait);
            if ($granted && $holdsOther && $read) {
                $other->release();
            }
            return $granted;
        });
        if (!$granted) {
            throw new LockConflictedException();
        }
        if ($this->watchdog) {
            $key->markUnserializable();
        } elseif ($wait !== 0.0) {
            $key->reduceLifetime($this->initialTtl); // a wait's lease starts at the grant
        }
        $this->checkNotExpired($key);
    }

    /** Holders of the lock other than this Key's owner. */
    private function otherHolders(\Rlock\SideLock $side): int
    {
        $info = \Rlock\Replies::map($this->client->session($side->name())->call(['RWLOCK.INFO', $side->name()]));
        $others = array_filter($info['holders'] ?? [], fn ($h) => (\Rlock\Replies::map($h)['owner'] ?? null) !== $side->owner());
        return count($others);
    }

    private function lock(Key $key): ReadWriteLock
    {
        if (!$key->hasState(self::STATE)) {
            $key->setState(self::STATE, bin2hex(random_bytes(12)));
        }
        return $this->locks[$this->id($key)] ??= $this->client->readWriteLock((string) $key, [
            'owner' => $key->getState(self::STATE),
            'lease' => $this->watchdog ? null : $this->initialTtl,
        ]);
    }

    private function id(Key $key): string
    {
        return $key->getState(self::STATE) . "\0" . $key;
    }

    /** rlock's errors (a connection lost for good, the module missing, ...) as Symfony's storage error. */
    private function storage(callable $body): mixed
    {
        try {
            return $body();
        } catch (LockException $e) {
            throw new LockStorageException($e->getMessage(), 0, $e);
        }
    }
}
