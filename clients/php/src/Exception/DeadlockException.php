<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** This wait would close a cycle of owners waiting for each other: refused at once, nothing queued. */
class DeadlockException extends LockException
{
}
