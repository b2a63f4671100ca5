/**
 * The shared topology harness (clients/harness/topology.py) as a child process: it prints the
 * topology as one JSON line once ready, then answers one JSON command a line. EOF on its stdin
 * (this process ended) tears everything down.
 */

import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { MODULE, REPO } from './support';

export interface Node {
  host: string;
  port: number;
  role?: string;
  id?: string;
  primary_id?: string;
  slots?: Array<[number, number]>;
}

export interface Described {
  kind: string;
  master_name?: string;
  primary?: Node;
  replicas: Node[];
  sentinels: Node[];
  nodes: Node[];
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

export class Topology {
  private readonly lines: string[] = [];
  private readonly waiting: Array<(line: string) => void> = [];
  private queue: Promise<unknown> = Promise.resolve();
  described!: Described;

  private constructor(private readonly child: ChildProcess) {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.on('line', (line) => {
      const next = this.waiting.shift();
      if (next) next(line);
      else this.lines.push(line);
    });
    child.on('exit', () => {
      for (const next of this.waiting.splice(0)) next('{"ok":false,"error":"the harness exited"}');
    });
  }

  private nextLine(): Promise<string> {
    const line = this.lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  static async start(kind: 'replicated' | 'sentinel' | 'cluster'): Promise<Topology> {
    const dir = mkdtempSync(path.join(os.tmpdir(), `rlock-node-${kind}-`));
    const child = spawn('python3', [path.join(REPO, 'clients/harness/topology.py'), kind, '--module', MODULE, '--dir', dir], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    running.add(child);
    child.on('exit', () => running.delete(child));
    const topology = new Topology(child);
    const first = JSON.parse(await topology.nextLine());
    if (first.ok === false) throw new Error(`the ${kind} topology did not start: ${first.error}`);
    topology.described = first;
    return topology;
  }

  /** One command; resolves with the topology it reports (also kept in `described`). */
  command(op: Record<string, unknown>): Promise<Described> {
    const run = this.queue.then(async () => {
      this.child.stdin!.write(`${JSON.stringify(op)}\n`);
      const answer = JSON.parse(await this.nextLine());
      if (!answer.ok) throw new Error(`harness ${op.op}: ${answer.error}`);
      this.described = answer.topology;
      return answer.topology as Described;
    });
    this.queue = run.catch(() => {});
    return run;
  }

  pause(port: number): Promise<Described> {
    return this.command({ op: 'pause', port });
  }

  resume(port: number): Promise<Described> {
    return this.command({ op: 'resume', port });
  }

  failover(key?: string): Promise<Described> {
    return this.command({ op: 'failover', ...(key === undefined ? {} : { key }) });
  }

  kill(port: number): Promise<Described> {
    return this.command({ op: 'kill', port });
  }

  awaitPromotion(key?: string): Promise<Described> {
    return this.command({ op: 'await_promotion', ...(key === undefined ? {} : { key }) });
  }

  async stop(): Promise<void> {
    await this.command({ op: 'stop' }).catch(() => {});
    this.child.stdin!.end();
    running.delete(this.child);
  }
}
