<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

/** An acquire that was not granted, as an actor reports it (the API answers false). */
final class NotAcquired extends \RuntimeException
{
}
