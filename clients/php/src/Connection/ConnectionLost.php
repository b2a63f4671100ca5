<?php

declare(strict_types=1);

namespace Rlock\Connection;

/** The connection broke before a reply came: the call may or may not have run (resend it with its ID). */
final class ConnectionLost extends \RuntimeException
{
}
