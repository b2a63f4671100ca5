<?php

declare(strict_types=1);

namespace Rlock;

/** Reading the server's replies as PHP values. */
final class Replies
{
    /** A RESP2 flat field/value list (or a RESP3 map, already an array) as an associative array. */
    public static function map(mixed $reply): array
    {
        if (!is_array($reply)) {
            return [];
        }
        if (!array_is_list($reply)) {
            return $reply;
        }
        $map = [];
        for ($i = 0; $i + 1 < count($reply); $i += 2) {
            $map[(string) $reply[$i]] = $reply[$i + 1];
        }
        return $map;
    }
}
