<?php

declare(strict_types=1);

namespace Rlock;

use Rlock\Exception\NotHeldException;

/**
 * A re-entrant, fenced lock (`RLOCK.*`): one owner at a time; the same owner (by default this
 * process's, see Client) re-enters and releases as many times.
 *
 *     $lock = $client->lock('order:42');          // no lease: the server's watchdog
 *     if ($lock->acquire(wait: 5.0)) {            // waits in the server's queue, not by polling
 *         try { ship(42, fence: $lock->token()); } finally { $lock->release(); }
 *     }
 */
class Lock extends Holding
{
    public function __construct(Session $session, string $name, string $owner, ?float $lease = null, ?\Closure $onLost = null)
    {
        parent::__construct($session, Family::lock(), $name, $owner, $lease, $onLost);
    }

    /** @see Holding::take() `$wait`: 0 one attempt, seconds, or null for no limit. */
    public function acquire(?float $wait = 0.0): bool
    {
        return $this->take($wait, 1);
    }

    /** Gives back one hold: the holds left (0: free, or handed to the next waiter). */
    public function release(): int
    {
        return $this->give(1);
    }

    /**
     * Runs one write command only while this owner holds the lock with its token (`RLOCK.GUARD`):
     * its reply. NotHeldException, with nothing run, once the lock is lost.
     */
    public function guard(string ...$command): mixed
    {
        if ($command === []) {
            throw new \Rlock\Exception\InvalidArgumentException('guard() needs a command to run');
        }
        if ($this->token() === null) {
            throw new NotHeldException("'{$this->name}' was never acquired by {$this->owner}: nothing was run");
        }
        return $this->session->call(['RLOCK.GUARD', $this->name, $this->owner, $this->token(), ...$command]);
    }
}
