<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** A lock operation failed; the subclasses say why. Other server errors come as this class itself. */
class LockException extends \RuntimeException implements RlockException
{
}
