import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface ServerProcess {
  name: string;
  pid: number;
  url: string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Another child of the bench (S6's stream client): killed with the servers. */
export function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
}

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
 * How `npm start` runs the service (package.json): the environment it sets (`NAME=value` words
 * before `node`) and the Node flags, so the bench measures the service as operators run it.
 */
export function serviceStart(root: string): { env: Record<string, string>; nodeFlags: string[] } {
  const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = packageJson.scripts.start.split(/\s+/);
  const env: Record<string, string> = {};
  while (words.length > 0 && /^[A-Z_][A-Z0-9_]*=\S*$/.test(words[0])) {
    const [name, value] = words.shift()!.split('=');
    env[name] = value;
  }
  if (words[0] !== 'node') throw new Error(`package.json "start" does not run node: ${packageJson.scripts.start}`);
  return { env, nodeFlags: words.slice(1).filter((word) => word.startsWith('--')) };
}

/** Node flags from a variable such as BENCH_NODE_ARGS ("--cpu-prof --cpu-prof-dir=/tmp/prof"). */
export function nodeFlagsFrom(value: string | undefined): string[] {
  return (value ?? '').split(' ').filter(Boolean);
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
  /** Node flags before the script (the service gets those of `npm start`: serviceStart). */
  nodeFlags?: string[];
}): Promise<ServerProcess> {
  const log = createWriteStream(join(options.logDir, `${options.name}.log`));
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the servers under load.
  const nodeArgs = nodeFlagsFrom(process.env.BENCH_NODE_ARGS);
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), ...nodeArgs, options.script], {
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
