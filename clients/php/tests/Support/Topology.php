<?php

declare(strict_types=1);

namespace Rlock\Tests\Support;

/**
 * A topology of the shared harness (clients/harness/topology.py, run as a child process): its
 * description from the first JSON line, then one JSON command a line. Closing stdin tears it down.
 */
final class Topology
{
    public readonly array $description;
    private $process;
    private $in;
    private $out;

    public function __construct(string $kind)
    {
        $script = dirname(__DIR__, 3) . '/harness/topology.py';
        $this->process = proc_open(['python3', $script, $kind, '--module', RedisServer::module()],
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR], $pipes);
        [$this->in, $this->out] = [$pipes[0], $pipes[1]];
        $this->description = $this->read();
    }

    /** Sends a command ({"op": ...}) and returns the topology it answers with. */
    public function command(array $command): array
    {
        fwrite($this->in, json_encode($command) . "\n");
        $reply = $this->read();
        if (!($reply['ok'] ?? false)) {
            throw new \RuntimeException('topology command ' . json_encode($command) . ' failed: ' . ($reply['error'] ?? json_encode($reply)));
        }
        return $reply['topology'] ?? [];
    }

    public function stop(): void
    {
        if (is_resource($this->process)) {
            @fwrite($this->in, json_encode(['op' => 'stop']) . "\n");
            @fclose($this->in);
            stream_get_contents($this->out);
            @fclose($this->out);
            proc_close($this->process);
        }
    }

    private function read(): array
    {
        $read = [$this->out];
        $none = null;
        if (stream_select($read, $none, $none, 180) < 1) {
            throw new \RuntimeException('the topology harness did not answer within 180 s');
        }
        $line = fgets($this->out);
        if ($line === false) {
            throw new \RuntimeException('the topology harness ended (see its stderr above)');
        }
        return json_decode($line, true, 512, JSON_THROW_ON_ERROR);
    }
}
