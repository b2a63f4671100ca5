<?php

declare(strict_types=1);

namespace Rlock;

/**
 * A read-write lock (`RWLOCK.*`): many readers or one writer, FIFO, writers not starved. The
 * writer may also read (downgrade); a reader asking to write gets UpgradeRefusedException at once.
 */
final class ReadWriteLock
{
    private SideLock $read;
    private SideLock $write;

    public function __construct(Session $session, string $name, string $owner, ?float $lease = null, ?\Closure $onLost = null)
    {
        $this->read = new SideLock($session, Family::read(), $name, $owner, $lease, $onLost);
        $this->write = new SideLock($session, Family::write(), $name, $owner, $lease, $onLost);
    }

    public function readLock(): SideLock
    {
        return $this->read;
    }

    public function writeLock(): SideLock
    {
        return $this->write;
    }
}
