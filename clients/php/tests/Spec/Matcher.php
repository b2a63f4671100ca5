<?php

declare(strict_types=1);

namespace Rlock\Tests\Spec;

/**
 * clients/spec's "comparing": literals, "$name" (a saved value), {"$gt": v} and the other
 * operators, {"$type"}, {"$len"}, arrays item by item, and other objects field by field against a
 * map. The admin connection speaks RESP2 (phpredis), so a map arrives as a flat field/value list:
 * an object pattern reads a list that way.
 */
final class Matcher
{
    private const OPERATORS = ['$gt', '$gte', '$lt', '$lte', '$ne', '$type', '$len'];

    public function __construct(private array &$saved)
    {
    }

    /** Null when the value matches, else what differs. */
    public function mismatch(mixed $expect, mixed $actual, string $path = 'result'): ?string
    {
        if (is_string($expect) && str_starts_with($expect, '$')) {
            $expect = $this->saved($expect);
        }
        if (is_array($expect) && !array_is_list($expect) && array_intersect(array_keys($expect), self::OPERATORS) !== []) {
            return $this->operators($expect, $actual, $path);
        }
        if (is_array($expect) && array_is_list($expect) && $expect !== []) {
            if (!is_array($actual) || !array_is_list($actual) || count($actual) !== count($expect)) {
                return "$path: expected a list of " . count($expect) . ', got ' . json_encode($actual);
            }
            foreach ($expect as $i => $item) {
                if (($why = $this->mismatch($item, $actual[$i], "{$path}[$i]")) !== null) {
                    return $why;
                }
            }
            return null;
        }
        if (is_array($expect) && $expect !== []) {
            $map = self::asMap($actual);
            if ($map === null) {
                return "$path: expected a map, got " . json_encode($actual);
            }
            foreach ($expect as $field => $item) {
                if (($why = $this->mismatch($item, $map[$field] ?? null, "$path.$field")) !== null) {
                    return $why;
                }
            }
            return null;
        }
        return $expect === $actual || (is_int($expect) && is_float($actual) && (float) $expect === $actual)
            ? null : "$path: expected " . json_encode($expect) . ', got ' . json_encode($actual);
    }

    /** "$name" anywhere in a command: the saved value, as a string. */
    public function substitute(array $command): array
    {
        return array_map(fn ($arg) => is_string($arg) && str_starts_with($arg, '$') ? (string) $this->saved($arg) : (string) $arg, $command);
    }

    public static function asMap(mixed $value): ?array
    {
        if (!is_array($value)) {
            return null;
        }
        if ($value === [] || !array_is_list($value)) {
            return $value;
        }
        return count($value) % 2 === 0 ? \Rlock\Replies::map($value) : null;
    }

    private function operators(array $expect, mixed $actual, string $path): ?string
    {
        foreach ($expect as $op => $operand) {
            if (is_string($operand) && str_starts_with($operand, '$') && !in_array($op, ['$type'], true)) {
                $operand = $this->saved($operand);
            }
            $ok = match ($op) {
                '$gt' => is_int($actual) && $actual > $operand,
                '$gte' => is_int($actual) && $actual >= $operand,
                '$lt' => is_int($actual) && $actual < $operand,
                '$lte' => is_int($actual) && $actual <= $operand,
                '$ne' => $actual !== $operand,
                '$type' => self::type($actual) === $operand,
                '$len' => is_array($actual) && count($actual) === $operand,
                default => throw new \InvalidArgumentException("unknown operator $op"),
            };
            if (!$ok) {
                return "$path: expected $op " . json_encode($operand) . ', got ' . json_encode($actual);
            }
        }
        return null;
    }

    private static function type(mixed $value): string
    {
        return match (true) {
            is_int($value) => 'integer',
            is_string($value) => 'string',
            is_bool($value) => 'boolean',
            $value === null => 'null',
            is_array($value) && array_is_list($value) => 'array',
            default => 'object',
        };
    }

    private function saved(string $name): mixed
    {
        $key = substr($name, 1);
        if (!array_key_exists($key, $this->saved)) {
            throw new \RuntimeException("$name is used before it was saved");
        }
        return $this->saved[$key];
    }
}
