<?php

declare(strict_types=1);

namespace Rlock;

use Rlock\Exception\InvalidArgumentException;

/**
 * How rlock's writes are confirmed by the replicas (docs/availability.md): `auto` waits for the
 * replicas connected to the primary (from `ROLE`, read at most once a second per connection; none:
 * no `WAIT` at all), a number waits for that many, `off` for none. `aof` sends `WAITAOF 1 n t`.
 * Not confirmed in time: `raise` (an acquisition is released first) or `warn` (kept, logged).
 */
final class Confirm
{
    private function __construct(
        public readonly string|int $replicas,
        public readonly int $timeoutMs,
        public readonly bool $aof,
        public readonly string $onFailure,
    ) {
    }

    /**
     * @param string|int|bool|Confirm|null $setting `auto` (default), `off`/false/null, `aof`, a replica count, or a Confirm
     */
    public static function from(mixed $setting, ?int $timeoutMs = null, string $onFailure = 'raise'): self
    {
        if ($setting instanceof self) {
            return $setting;
        }
        if (!in_array($onFailure, ['raise', 'warn'], true)) {
            throw new InvalidArgumentException("confirm on failure is 'raise' or 'warn', not '$onFailure'");
        }
        $timeoutMs ??= 1000;
        if ($timeoutMs < 1) {
            throw new InvalidArgumentException("the confirmation timeout must be at least 1 ms, not $timeoutMs");
        }
        return match (true) {
            $setting === true, $setting === 'auto' => new self('auto', $timeoutMs, false, $onFailure),
            $setting === false, $setting === null, $setting === 'off', $setting === 0 => new self(0, $timeoutMs, false, $onFailure),
            $setting === 'aof' => new self('auto', $timeoutMs, true, $onFailure),
            is_int($setting) && $setting > 0 => new self($setting, $timeoutMs, false, $onFailure),
            default => throw new InvalidArgumentException(
                "confirm is 'auto', 'off', 'aof' or a replica count >= 0, not " . var_export($setting, true)
            ),
        };
    }

    public function isOff(): bool
    {
        return $this->replicas === 0;
    }

    /** The command that waits for `$replicas` replicas after this connection's last write. */
    public function waitCommand(int $replicas): array
    {
        return $this->aof
            ? ['WAITAOF', 1, $replicas, $this->timeoutMs]
            : ['WAIT', $replicas, $this->timeoutMs];
    }

    /** How many replicas acknowledged, from the reply of waitCommand(). */
    public function acknowledged(mixed $reply): int
    {
        return $this->aof ? (int) ($reply[1] ?? 0) : (int) $reply;
    }
}
