<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

/**
 * A tests/bin/actor.php child process: send() a step and read its reply now (call) or later
 * (start, then join), so the process can block in the server's queue while the test goes on.
 */
final class ActorProcess
{
    public readonly int $pid;
    private $process;
    private $in;
    private $out;
    private int $pending = 0;

    public function __construct(int $port, string $driver = 'phpredis', ?string $user = null, ?string $password = null, ?string $owner = null)
    {
        $command = [PHP_BINARY, dirname(__DIR__) . '/bin/actor.php', "--port=$port", "--driver=$driver"];
        foreach (['user' => $user, 'password' => $password, 'owner' => $owner] as $name => $value) {
            if ($value !== null) {
                $command[] = "--$name=$value";
            }
        }
        $this->process = proc_open($command, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR], $pipes);
        [$this->in, $this->out] = [$pipes[0], $pipes[1]];
        $this->pid = (int) $this->read(30.0)['ready'];
    }

    /** Runs a step and returns its reply, {"ok":..., "result"|"kind","error"}. */
    public function call(array $step, float $timeout = 60.0): array
    {
        $this->start($step);
        return $this->join($timeout);
    }

    /** Runs a step and returns its result, failing loudly on an error reply. */
    public function result(array $step): mixed
    {
        $reply = $this->call($step);
        if (!$reply['ok']) {
            throw new \RuntimeException("actor step {$step['op']} failed: {$reply['kind']}: {$reply['error']}");
        }
        return $reply['result'];
    }

    public function start(array $step): void
    {
        fwrite($this->in, json_encode($step) . "\n");
        $this->pending++;
    }

    public function join(float $timeout = 60.0): array
    {
        $this->pending--;
        return $this->read($timeout);
    }

    /** Whether a started step has replied already (without reading the reply). */
    public function hasReplied(): bool
    {
        $read = [$this->out];
        $none = null;
        return stream_select($read, $none, $none, 0, 0) > 0;
    }

    public function kill(): void
    {
        posix_kill($this->pid, SIGKILL);
        $this->close();
    }

    public function close(): void
    {
        if (is_resource($this->process)) {
            @fclose($this->in);
            @fclose($this->out);
            proc_terminate($this->process, SIGKILL);
            proc_close($this->process);
        }
    }

    public function __destruct()
    {
        $this->close();
    }

    private function read(float $timeout): array
    {
        $read = [$this->out];
        $none = null;
        $seconds = (int) floor($timeout);
        if (stream_select($read, $none, $none, $seconds, (int) (($timeout - $seconds) * 1e6)) < 1) {
            throw new \RuntimeException("actor {$this->pid} did not answer within {$timeout} s");
        }
        $line = fgets($this->out);
        if ($line === false) {
            throw new \RuntimeException("actor {$this->pid} ended without answering");
        }
        return json_decode($line, true, 512, JSON_THROW_ON_ERROR);
    }
}
