import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface ServerProcess {
  name: string;
  pid: number;
  url: string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Last resort on exit: no child outlives the orchestrator. */
export function killAllChildrenNow(): void {
  for (const child of running) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

async function waitUntilReady(url: string, child: ChildProcess, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited during start (code ${child.exitCode ?? child.signalCode}); see its log`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${name} did not become ready at ${url} within ${timeoutMs / 1000} s`);
}

/**
 * Starts `node <script>` with the given environment, its output in <logDir>/<name>.log (and each
 * stdout line to `onStdoutLine`), and waits for readyUrl.
 */
export async function startServer(options: {
  name: string;
  script: string;
  env: Record<string, string>;
  url: string;
  readyPath: string;
  logDir: string;
  onStdoutLine?: (line: string) => void;
}): Promise<ServerProcess> {
  const log = createWriteStream(join(options.logDir, `${options.name}.log`));
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the servers under load.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, options.script], {
    env: { PATH: process.env.PATH ?? '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  if (options.onStdoutLine && child.stdout) createInterface({ input: child.stdout }).on('line', options.onStdoutLine);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  exited.then(() => running.delete(child), () => undefined);
  await waitUntilReady(`${options.url}${options.readyPath}`, child, options.name, 60_000);
  return {
    name: options.name,
    pid: child.pid!,
    url: options.url,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
