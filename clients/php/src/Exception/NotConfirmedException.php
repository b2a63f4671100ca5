<?php

declare(strict_types=1);

namespace Rlock\Exception;

/** Fewer replicas than required acknowledged a write in time; an acquisition was undone first. */
class NotConfirmedException extends LockException
{
}
