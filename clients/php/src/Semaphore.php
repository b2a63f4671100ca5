<?php

declare(strict_types=1);

namespace Rlock;

use Rlock\Exception\InvalidArgumentException;

/**
 * A semaphore whose permits belong to their holder (`RSEM.*`): they come back when the holder
 * releases them, when its process dies (the watchdog), or when its lease ends. FIFO: a request for
 * several permits at the head is not passed by smaller ones.
 */
final class Semaphore extends Holding
{
    public function __construct(Session $session, string $name, string $owner, ?float $lease = null, ?\Closure $onLost = null)
    {
        parent::__construct($session, Family::semaphore(), $name, $owner, $lease, $onLost);
    }

    /** Sets the permits when the semaphore does not exist yet: true, else false (it is left as it is). */
    public function trySetPermits(int $permits): bool
    {
        self::checkCount($permits, 0, 'permits');
        return (int) $this->session->write(['RSEM.SETPERMITS', $this->name, $permits, 'ID', Session::newId()]) === 1;
    }

    /** Adds (negative: removes) available permits: the permits available now. */
    public function addPermits(int $permits): int
    {
        return (int) $this->session->write(['RSEM.ADDPERMITS', $this->name, $permits, 'ID', Session::newId()]);
    }

    public function availablePermits(): int
    {
        return (int) $this->session->call(['GET', $this->name]);
    }

    /** @see Holding::take() */
    public function acquire(int $permits = 1, ?float $wait = 0.0): bool
    {
        self::checkCount($permits, 1, 'permits');
        return $this->take($wait, $permits);
    }

    /** Gives back permits: the permits this owner still holds. */
    public function release(int $permits = 1): int
    {
        self::checkCount($permits, 1, 'permits');
        return $this->give($permits);
    }

    private static function checkCount(int $n, int $min, string $what): void
    {
        if ($n < $min) {
            throw new InvalidArgumentException("$what must be at least $min, not $n");
        }
    }
}
