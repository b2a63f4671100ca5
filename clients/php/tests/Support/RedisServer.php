<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

/**
 * One redis-server process for a test class: a free port, a temp dir, the module loaded (unless
 * told not to), and ready once it answers `INFO server` with its own pid (so a server of someone
 * else that took the port meanwhile is never mistaken for it: then a new port is tried).
 */
final class RedisServer
{
    public readonly int $port;
    public readonly int $pid;
    private $process;
    private string $dir;

    public function __construct(bool $withModule = true, array $args = [])
    {
        $this->dir = sys_get_temp_dir() . '/rlock-php-' . bin2hex(random_bytes(6));
        mkdir($this->dir);
        for ($attempt = 1; ; $attempt++) {
            $port = self::freePort();
            $command = ['redis-server', '--port', (string) $port, '--bind', '127.0.0.1', '--dir', $this->dir,
                '--save', '', '--appendonly', 'no', '--logfile', "{$this->dir}/redis-$port.log", ...$args];
            if ($withModule) {
                array_push($command, '--loadmodule', self::module());
            }
            $this->process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
            $pid = proc_get_status($this->process)['pid'];
            if (self::awaitReady($port, $pid, $this->process)) {
                [$this->port, $this->pid] = [$port, $pid];
                return;
            }
            proc_terminate($this->process, 9);
            proc_close($this->process);
            if ($attempt === 5) {
                throw new \RuntimeException("redis-server did not start; see {$this->dir}");
            }
        }
    }

    public static function module(): string
    {
        $module = getenv('RLOCK_MODULE') ?: dirname(__DIR__, 4) . '/target/release/librlock.so';
        if (!is_file($module)) {
            throw new \RuntimeException("no rlock module at $module (build it, or set RLOCK_MODULE)");
        }
        return $module;
    }

    public function connect(string $driver = 'phpredis', ?string $user = null, ?string $password = null): \Redis|\Predis\Client
    {
        return Drivers::connect($driver, $this->port, $user, $password);
    }

    /** A raw command on a new phpredis connection (the tests' admin view of the server). */
    public function admin(string ...$args): mixed
    {
        static $admins = [];
        $admin = $admins[$this->port] ??= $this->connect();
        return $admin->rawCommand(...$args);
    }

    public function stop(): void
    {
        if (is_resource($this->process)) {
            proc_terminate($this->process, 9);
            proc_close($this->process);
        }
        exec('rm -rf ' . escapeshellarg($this->dir));
    }

    private static function freePort(): int
    {
        $socket = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int) substr(strrchr(stream_socket_get_name($socket, false), ':'), 1);
        fclose($socket);
        return $port;
    }

    private static function awaitReady(int $port, int $pid, $process): bool
    {
        $deadline = microtime(true) + 30;
        while (microtime(true) < $deadline) {
            if (!proc_get_status($process)['running']) {
                return false; // e.g. the port was taken meanwhile
            }
            try {
                $redis = new \Redis();
                if (@$redis->connect('127.0.0.1', $port, 1.0)) {
                    $info = $redis->info('server');
                    $redis->close();
                    return (int) ($info['process_id'] ?? 0) === $pid;
                }
            } catch (\RedisException) {
            }
            usleep(20000);
        }
        return false;
    }
}
