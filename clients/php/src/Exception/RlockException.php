<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** Every exception rlock's PHP helper throws implements this. */
interface RlockException extends \Throwable
{
}
