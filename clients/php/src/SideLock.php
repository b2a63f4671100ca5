<?php

declare(strict_types=1);

namespace Rlock;

/** One side (read or write) of a ReadWriteLock, with a Lock's acquire and release. */
final class SideLock extends Holding
{
    /** @see Holding::take() */
    public function acquire(?float $wait = 0.0): bool
    {
        return $this->take($wait, 1);
    }

    /** Gives back one hold of this side: the holds of this side left. */
    public function release(): int
    {
        return $this->give(1);
    }
}
