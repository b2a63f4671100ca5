<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** A release, renewal or guarded write by an owner that does not hold the lock (never did, or lost it). */
class NotHeldException extends LockException
{
}
