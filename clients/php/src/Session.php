<?php

declare(strict_types=1);

namespace Rlock;

use Rlock\Connection\Connection;
use Rlock\Connection\ConnectionLost;
use Rlock\Connection\ServerError;
use Rlock\Exception\DeadlockException;
use Rlock\Exception\LockException;
use Rlock\Exception\ModuleMissingException;
use Rlock\Exception\NotConfirmedException;
use Rlock\Exception\NotHeldException;
use Rlock\Exception\UpgradeRefusedException;
use Rlock\Exception\WrongTypeException;

/**
 * rlock's calls on one connection (to one node): request ids and their one resend after a broken
 * connection, confirmation by the replicas, the server's errors as exceptions, and the watchdog
 * holdings bound to this connection (re-bound with `RENEW ... WATCHDOG` after a reconnect).
 *
 * PHP has one thread per request or worker, so this connection is both the one that waits
 * (a blocked `WAIT` in the server's queue) and the one the watchdog watches: when the process
 * ends, or dies, the server ends its holdings at once.
 */
final class Session
{
    /** @var array<int, Holding> watchdog holdings bound to this connection, by object id */
    private array $bound = [];
    private ?int $replicas = null;
    private float $replicasReadAt = 0.0;
    private int $reconnects = 0;

    public function __construct(
        public readonly Connection $connection,
        public readonly Confirm $confirm,
        private readonly ?\Closure $logger = null,
    ) {
    }

    /** A fresh request id: the same on every resend of one logical call. */
    public static function newId(): string
    {
        return bin2hex(random_bytes(16));
    }

    /**
     * Runs one command (its `ID`, if any, already in $args); a broken connection is reopened and
     * the same command sent once more (the server answers a repeated ID as it did the first time).
     * `$readTimeout`: 0.0 keeps the connection's own; a blocked wait passes its deadline in
     * seconds (null: none), and the read timeout is lifted for it.
     */
    public function call(array $args, ?float $readTimeout = 0.0): mixed
    {
        return $this->raise($this->send([$args], $readTimeout)[0], $args);
    }

    /**
     * A write confirmed by the replicas: `$args` pipelined with `WAIT n t`. A reply of nil (nothing
     * written) is not confirmed. Not confirmed in time: `$undo` runs (an acquisition gives itself
     * back) and NotConfirmedException is thrown, or under `warn` it is logged.
     */
    public function write(array $args, ?callable $undo = null, ?float $readTimeout = 0.0): mixed
    {
        $required = $this->requiredReplicas();
        if ($required === 0) {
            return $this->call($args, $readTimeout);
        }
        [$reply, $ack] = $this->send([$args, $this->confirm->waitCommand($required)], $readTimeout);
        $reply = $this->raise($reply, $args);
        if ($reply === null) {
            return null;
        }
        $confirmed = $ack instanceof ServerError ? 0 : $this->confirm->acknowledged($ack);
        if ($confirmed < $required) {
            $what = "confirmed by $confirmed of $required replicas within {$this->confirm->timeoutMs} ms";
            if ($this->confirm->onFailure === 'warn') {
                $this->log("rlock: {$args[0]} {$args[1]} $what; kept");
                return $reply;
            }
            if ($undo !== null) {
                $undo();
                throw new NotConfirmedException("{$args[0]} {$args[1]}: $what; undone, not held");
            }
            throw new NotConfirmedException("{$args[0]} {$args[1]}: $what; the write stands on the primary");
        }
        return $reply;
    }

    /** Keeps the watchdog from ending this connection's holdings while the process is otherwise idle. */
    public function ping(): void
    {
        $this->call(['PING']);
    }

    public function bind(Holding $holding): void
    {
        $this->bound[spl_object_id($holding)] = $holding;
    }

    public function unbind(Holding $holding): void
    {
        unset($this->bound[spl_object_id($holding)]);
    }

    /** @param list<array> $commands */
    private function send(array $commands, ?float $readTimeout): array
    {
        $run = fn () => $this->connection->pipeline($commands);
        $once = function () use ($run, $readTimeout) {
            $replies = $readTimeout === 0.0 ? $run() : $this->connection->withReadTimeout($readTimeout, $run);
            // A primary that became a replica (a failover) refuses writes: find the primary again.
            if ($replies[0] instanceof ServerError && str_starts_with($replies[0]->getMessage(), 'READONLY')) {
                throw new ConnectionLost($replies[0]->getMessage());
            }
            return $replies;
        };
        try {
            return $once();
        } catch (ConnectionLost) {
            $this->reconnect();
            return $once();
        }
    }

    /** How many times this session reconnected (a call that spans one may need a re-bind). */
    public function reconnects(): int
    {
        return $this->reconnects;
    }

    private function reconnect(): void
    {
        $this->reconnects++;
        $this->connection->reconnect();
        $this->replicas = null;
        // The old connection's watchdog holdings ended with it unless re-bound from this one.
        foreach ($this->bound as $holding) {
            $holding->rebind();
        }
    }

    private function requiredReplicas(): int
    {
        if ($this->confirm->isOff()) {
            return 0;
        }
        if (is_int($this->confirm->replicas)) {
            return $this->confirm->replicas;
        }
        if ($this->replicas === null || microtime(true) - $this->replicasReadAt > 1.0) {
            $role = $this->call(['ROLE']);
            $this->replicas = ($role[0] ?? '') === 'master' ? count($role[2] ?? []) : 0;
            $this->replicasReadAt = microtime(true);
        }
        return $this->replicas;
    }

    /** A reply as it is, or its error as rlock's exception. */
    private function raise(mixed $reply, array $args): mixed
    {
        if (!$reply instanceof ServerError) {
            return $reply;
        }
        throw self::exceptionFor($reply->getMessage(), (string) $args[0], $this->connection->describe(), $reply);
    }

    public static function exceptionFor(string $message, string $command, string $where, ?\Throwable $previous = null): LockException
    {
        if (preg_match("/^ERR unknown command '(rlock|rwlock|rsem|rlatch|rcsem)\\./i", $message)) {
            return new ModuleMissingException(
                "the rlock module is not loaded on $where: it answers $command with \"$message\"; "
                . 'load it (loadmodule /path/to/librlock.so in redis.conf, or MODULE LOAD)',
                0,
                $previous
            );
        }
        return match (true) {
            str_starts_with($message, 'WRONGTYPE') => new WrongTypeException($message, 0, $previous),
            str_starts_with($message, 'DEADLOCK') => new DeadlockException($message, 0, $previous),
            str_starts_with($message, 'NOTOWNER') => new NotHeldException($message, 0, $previous),
            str_contains($message, 'holds the read lock') => new UpgradeRefusedException($message, 0, $previous),
            default => new LockException("$command: $message", 0, $previous),
        };
    }

    private function log(string $message): void
    {
        $this->logger !== null ? ($this->logger)($message) : error_log($message);
    }
}
