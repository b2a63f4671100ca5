<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** A bad argument, refused before anything is sent to the server. */
class InvalidArgumentException extends \InvalidArgumentException implements RlockException
{
}
