<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** An owner holding only the read side asked for the write side: it could only wait for itself. */
class UpgradeRefusedException extends LockException
{
}
