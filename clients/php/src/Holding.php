<?php

declare(strict_types=1);

namespace Rlock;

use Rlock\Exception\InvalidArgumentException;
use Rlock\Exception\NotHeldException;

/**
 * One owner's holding of one key of one type (a plain lock, a side of a read-write lock, a
 * semaphore's permits): acquire (at once, or waiting in the server's FIFO queue), release,
 * refresh, the fencing token, and loss detection.
 *
 * No lease (the default): the holding is `PX 30000 WATCHDOG`, bound to this process's connection,
 * so it ends the moment the process ends or dies; the process must talk to the server (any
 * command, or keepAlive()) at least every `rlock.watchdog-idle-ms` (30 s) while it holds. With a
 * lease (seconds): a plain `PX` lease, which refresh() extends; this is what persistent
 * connections (`pconnect`) need, since their connection outlives the request.
 *
 * PHP has no background thread, so a loss is found when the holder next talks about the holding:
 * refresh(), release(), isHeld(), or a re-bind after a reconnect. `$onLost($holding)` is called
 * once then, release() throws NotHeldException, and isHeld() is false.
 */
class Holding
{
    public const WATCHDOG_LEASE_MS = 30000;
    private const YEAR_MS = 31536000000;

    private ?int $token = null;
    private int $holds = 0;
    private bool $lost = false;
    private ?int $leaseMs;

    public function __construct(
        protected readonly Session $session,
        protected readonly Family $family,
        protected readonly string $name,
        protected readonly string $owner,
        ?float $lease = null,
        private readonly ?\Closure $onLost = null,
    ) {
        if ($name === '') {
            throw new InvalidArgumentException('a lock name must not be empty');
        }
        self::checkOwner($owner);
        $this->leaseMs = $lease === null ? null : self::milliseconds($lease, 'the lease', 1);
    }

    public static function checkOwner(string $owner): void
    {
        if ($owner === '') {
            throw new InvalidArgumentException('an owner must not be empty');
        }
        if (str_starts_with($owner, 'rlock:')) {
            throw new InvalidArgumentException("owners starting with 'rlock:' are reserved by rlock: '$owner'");
        }
    }

    /** Seconds as whole milliseconds, at least $min and at most a year. */
    public static function milliseconds(float|int $seconds, string $what, int $min = 0): int
    {
        if (!is_finite((float) $seconds) || $seconds * 1000 < $min || $seconds * 1000 > self::YEAR_MS) {
            throw new InvalidArgumentException(
                sprintf('%s must be between %s and %d seconds, not %s', $what, $min / 1000, self::YEAR_MS / 1000, var_export($seconds, true))
            );
        }
        return max($min, (int) round($seconds * 1000));
    }

    /**
     * Takes the holding (again: the server counts re-entries of one owner). `$wait`: 0 = one
     * attempt; seconds = wait that long in the server's queue (this connection blocked in `WAIT`);
     * null = wait as long as it takes. True when granted.
     */
    protected function take(?float $wait, int $permits): bool
    {
        $waitMs = $wait === null ? 0 : ($wait == 0 ? null : self::milliseconds($wait, 'the wait', 1));
        $args = [...$this->family->acquire($this->name, $this->owner, $permits), 'PX', $this->leaseMs ?? self::WATCHDOG_LEASE_MS];
        if ($this->leaseMs === null) {
            $args[] = 'WATCHDOG';
        }
        $blocked = $wait === null || $waitMs !== null;
        if ($blocked) {
            array_push($args, 'WAIT', $waitMs);
        }
        array_push($args, 'ID', Session::newId());
        // A blocked wait must not be cut by the client's read timeout: the server answers by its deadline.
        $readTimeout = !$blocked ? 0.0 : $wait;
        $reconnects = $this->session->reconnects();
        $token = $this->session->write($args, fn () => $this->giveBack($permits), $readTimeout);
        if ($token === null) {
            return false;
        }
        $this->token = (int) $token;
        $this->holds += $permits;
        $this->lost = false;
        if ($this->leaseMs === null) {
            $this->session->bind($this);
            if ($this->session->reconnects() !== $reconnects) {
                // Answered by a resend on a new connection: the grant may have been bound to the
                // old one (and ended with it). Bind it here, or report it lost.
                $this->rebind();
                return !$this->lost;
            }
        }
        return true;
    }

    /** Gives back holds (or permits): the number the owner still holds. NotHeldException when it held none. */
    protected function give(int $permits): int
    {
        $left = $this->session->write([...$this->family->release($this->name, $this->owner, $permits), 'ID', Session::newId()]);
        if ($left === null) {
            $this->markLost();
            throw new NotHeldException("'{$this->name}' is not held by {$this->owner}" . ($this->lost ? ' any more: it was lost' : ''));
        }
        $this->holds = max(0, $this->holds - $permits);
        if ((int) $left === 0) {
            $this->holds = 0;
            $this->session->unbind($this);
        }
        return (int) $left;
    }

    /**
     * Starts the lease again, `$lease` seconds (default: this holding's lease, or the watchdog's
     * 30 s). NotHeldException (and the lost notice) when the owner no longer holds it.
     */
    public function refresh(?float $lease = null): void
    {
        $leaseMs = $lease === null ? ($this->leaseMs ?? self::WATCHDOG_LEASE_MS) : self::milliseconds($lease, 'the lease', 1);
        if ((int) $this->session->write($this->family->renew($this->name, $this->owner, $leaseMs, false)) !== 1) {
            $this->markLost();
            throw new NotHeldException("'{$this->name}' is not held by {$this->owner} any more: it was lost");
        }
        if ($lease !== null && $this->leaseMs !== null) {
            $this->leaseMs = $leaseMs;
        }
    }

    /** Re-binds a watchdog holding to this session's new connection after a reconnect, or reports it lost. */
    public function rebind(): void
    {
        $renew = $this->family->renew($this->name, $this->owner, self::WATCHDOG_LEASE_MS, true);
        if ((int) $this->session->call($renew) !== 1) {
            $this->markLost();
        }
    }

    /** Whether the server shows this owner holding it now (false also reports a loss, once). */
    public function isHeld(): bool
    {
        $held = $this->family->holds($this->session->call($this->family->info($this->name)), $this->owner);
        if (!$held && $this->holds > 0) {
            $this->markLost();
        }
        return $held;
    }

    /** Whether a loss was found (by refresh, release, isHeld or a re-bind). */
    public function isLost(): bool
    {
        return $this->lost;
    }

    /** The fencing token of the latest grant: pass it to what you protect, which refuses lower ones. */
    public function token(): ?int
    {
        return $this->token;
    }

    public function owner(): string
    {
        return $this->owner;
    }

    public function name(): string
    {
        return $this->name;
    }

    /** Removes the lock whoever holds it (an operator's tool): true when something was removed. */
    public function forceRelease(): bool
    {
        return (int) $this->session->write($this->family->forceRelease($this->name)) === 1;
    }

    /** A round trip on the watchdog's connection, for a process that holds while busy elsewhere. */
    public function keepAlive(): void
    {
        $this->session->ping();
    }

    /** Forgets the client-side count after a loss, tells `onLost` once. */
    private function markLost(): void
    {
        $this->session->unbind($this);
        if ($this->holds === 0 && $this->lost) {
            return;
        }
        $wasHolding = $this->holds > 0;
        $this->holds = 0;
        if ($wasHolding) {
            $this->lost = true;
            if ($this->onLost !== null) {
                ($this->onLost)($this);
            }
        }
    }

    /** Undoes an acquisition the replicas did not confirm (with a request id of its own). */
    private function giveBack(int $permits): void
    {
        $this->session->call([...$this->family->release($this->name, $this->owner, $permits), 'ID', Session::newId()]);
        $this->session->unbind($this);
    }
}
