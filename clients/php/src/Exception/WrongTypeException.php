<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** The key holds another type (another kind of lock, or a plain Redis value). */
class WrongTypeException extends LockException
{
}
