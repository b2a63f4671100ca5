<?php

declare(strict_types=1);

namespace Rlock\Connection;

/** An error reply from the server, as the adapters hand it over (mapped to rlock's exceptions by Replies). */
final class ServerError extends \RuntimeException
{
}
