<?php

declare(strict_types=1);

namespace Rlock\Laravel;

use Illuminate\Cache\Lock as IlluminateLock;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Rlock\Client;
use Rlock\Exception\NotHeldException;
use Rlock\Lock;

/**
 * What `Cache::lock($name, $seconds, $owner)` returns with the rlock cache driver: Laravel's lock
 * (`get`, `block`, `release`, `forceRelease`, `owner`, `isOwnedByCurrentProcess`, `refresh`) on
 * an rlock lock (`RLOCK.*`) whose owner is Laravel's owner string, so `Cache::restoreLock` in
 * another process releases it.
 *
 * `block($seconds)` waits in the server's FIFO queue (a blocked `WAIT`, granted the moment the
 * holder releases), not by retrying every 250 ms. `$seconds > 0`: a lease of that long, as with
 * Laravel's Redis lock. `$seconds = 0` ("until released"): with `watchdog` (the default) the lock
 * is bound to this process's Redis connection and ends the moment the request or worker ends or
 * dies; without it, a lease of a year, Laravel's own "forever".
 *
 * Differences: the same owner re-enters (`get()` true again) and `release()` frees the lock whole,
 * however often it was entered.
 */
class RlockLock extends IlluminateLock
{
    private const FOREVER_S = 31536000.0;

    private Lock $lock;

    public function __construct(private readonly Client $client, $name, $seconds, $owner = null, bool $watchdog = true)
    {
        parent::__construct($name, $seconds, $owner);
        $lease = $seconds > 0 ? (float) $seconds : ($watchdog ? null : self::FOREVER_S);
        $this->lock = $client->lock((string) $name, ['owner' => (string) $this->owner, 'lease' => $lease]);
    }

    public function acquire()
    {
        return $this->lock->acquire();
    }

    /**
     * Waits up to `$seconds` in the server's queue; LockTimeoutException when it runs out.
     * With a callback: runs it holding the lock, releases after, and returns its result.
     */
    public function block($seconds, $callback = null)
    {
        if (!$this->lock->acquire($seconds > 0 ? (float) $seconds : 0.0)) {
            throw new LockTimeoutException();
        }
        if (is_callable($callback)) {
            try {
                return $callback();
            } finally {
                $this->release();
            }
        }
        return true;
    }

    /** Frees the lock if this owner holds it (all its holds): true, else false. */
    public function release()
    {
        try {
            while ($this->lock->release() > 0) {
            }
            return true;
        } catch (NotHeldException) {
            return false;
        }
    }

    public function forceRelease()
    {
        $this->lock->forceRelease();
    }

    /** Starts the lease again (`$seconds`, default the lock's own): true, or false when it is not held. */
    public function refresh($seconds = null)
    {
        try {
            $this->lock->refresh($seconds === null ? null : (float) $seconds);
            return true;
        } catch (NotHeldException) {
            return false;
        }
    }

    public function isOwnedByCurrentProcess()
    {
        return parent::isOwnedByCurrentProcess();
    }

    /** The fencing token of the latest grant (pass it to what the lock protects). */
    public function token(): ?int
    {
        return $this->lock->token();
    }

    protected function getCurrentOwner()
    {
        $info = $this->client->session((string) $this->name)->call(['RLOCK.INFO', (string) $this->name]);
        $owner = \Rlock\Replies::map($info)['owner'] ?? null;
        return $owner === false ? null : $owner;
    }
}
