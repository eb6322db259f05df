import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { track } from './servers.js';

/** What a client child process may answer besides its own messages: its failure, said before it exits. */
type Failed = { type: 'failed'; message: string };

/**
 * The parent's side of a bench client that runs in a process of its own (the stream client, the
 * long-poll client): messages to it, its answers awaited by type, and its end.
 */
export abstract class ChildProcessClient<To extends { type: string }, From extends { type: string }> {
  private readonly replies: Array<From | Failed> = [];
  private waiting: (() => void) | null = null;
  private exited = false;

  protected constructor(
    private readonly child: ChildProcess,
    private readonly label: string,
  ) {
    child.on('message', (message) => {
      this.replies.push(message as From | Failed);
      this.waiting?.();
    });
    child.once('exit', () => {
      this.exited = true;
      this.waiting?.();
    });
  }

  /** Starts bench/<script> (compiled beside this file) with an IPC channel. */
  protected static forkScript(script: string): ChildProcess {
    const path = join(dirname(fileURLToPath(import.meta.url)), script);
    // No inherited flags (BENCH_NODE_ARGS profiles the servers, not this); structured clone keeps Infinity.
    const child = fork(path, [], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    track(child);
    return child;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Ends the process (it closes what it holds first); killed after 10 s. */
  async close(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.send({ type: 'close' } as To);
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  }

  protected send(message: To): void {
    if (!this.exited) this.child.send(message);
  }

  /** The next answer of `type`; a `failed` answer, or an exit before the answer, throws. */
  protected async reply<T extends From['type']>(type: T): Promise<Extract<From, { type: T }>> {
    for (;;) {
      const index = this.replies.findIndex((message) => message.type === type || message.type === 'failed');
      if (index >= 0) {
        const [message] = this.replies.splice(index, 1);
        if (message.type === 'failed') throw new Error(`${this.label}: ${(message as Failed).message}`);
        return message as Extract<From, { type: T }>;
      }
      if (this.exited) throw new Error(`${this.label} exited before it answered ${type}`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
      this.waiting = null;
    }
  }
}
