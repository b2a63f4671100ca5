<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** The server answers rlock's commands as unknown: the module is not loaded there. */
class ModuleMissingException extends LockException
{
}
