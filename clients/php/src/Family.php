<?php

declare(strict_types=1);

namespace Rlock;

/**
 * A type's command set (docs/clients.md's `Family`): how the plain lock, each side of the
 * read-write lock and the semaphore acquire, release, renew and show their holders. A holding
 * adds only the options every type shares (PX, WAIT, WATCHDOG, ID).
 */
final class Family
{
    private function __construct(
        public readonly string $name,
        private readonly string $prefix,
        private readonly ?string $mode,
    ) {
    }

    public static function lock(): self
    {
        return new self('lock', 'RLOCK', null);
    }

    public static function read(): self
    {
        return new self('read', 'RWLOCK', 'READ');
    }

    public static function write(): self
    {
        return new self('write', 'RWLOCK', 'WRITE');
    }

    public static function semaphore(): self
    {
        return new self('semaphore', 'RSEM', null);
    }

    public function acquire(string $key, string $owner, int $permits): array
    {
        return [...$this->head('ACQUIRE', $key, $owner), ...$this->permits($permits)];
    }

    public function release(string $key, string $owner, int $permits): array
    {
        return [...$this->head('RELEASE', $key, $owner), ...$this->permits($permits)];
    }

    public function renew(string $key, string $owner, int $leaseMs, bool $watchdog): array
    {
        return [$this->prefix . '.RENEW', $key, $owner, 'PX', $leaseMs, ...($watchdog ? ['WATCHDOG'] : [])];
    }

    public function info(string $key): array
    {
        return [$this->prefix . '.INFO', $key];
    }

    public function forceRelease(string $key): array
    {
        return [$this->prefix . '.FORCERELEASE', $key];
    }

    /** Whether an INFO reply (a flat field/value list, RESP2) shows `$owner` holding on this side. */
    public function holds(mixed $info, string $owner): bool
    {
        if (!is_array($info)) {
            return false;
        }
        $fields = Replies::map($info);
        if ($this->prefix === 'RLOCK') {
            return ($fields['owner'] ?? null) === $owner;
        }
        foreach ($fields['holders'] ?? [] as $holder) {
            $holder = Replies::map($holder);
            if (($holder['owner'] ?? null) === $owner && ($this->mode === null || strtoupper((string) $holder['mode']) === $this->mode)) {
                return true;
            }
        }
        return false;
    }

    private function head(string $verb, string $key, string $owner): array
    {
        return [$this->prefix . '.' . $verb, $key, $owner, ...($this->mode === null ? [] : [$this->mode])];
    }

    private function permits(int $permits): array
    {
        return $this->prefix === 'RSEM' ? ['PERMITS', $permits] : [];
    }
}
