import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, portAccepts, root, scratchDir, stopLeftoverPostgres, waitFor, type Running } from '../support/service-process.js';

/**
 * npm run start:dev as a developer runs it in a terminal: compiled in watch mode, restarted when a
 * source changes, stopped with Ctrl-C. Each restart and the stop must end the embedded PostgreSQL
 * of the instance before it, never leave one behind.
 */
const dataDir = scratchDir();
let dev: Running | undefined;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const postmasterPid = () => Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
const count = (text: string, part: string) => text.split(part).length - 1;

afterAll(() => {
  if (dev?.child.pid && alive(dev.child.pid)) process.kill(-dev.child.pid, 'SIGKILL');
  stopLeftoverPostgres(dataDir);
});

it('restarts when tsc writes a new build, with one PostgreSQL at a time, and Ctrl-C stops everything, its PostgreSQL included', async () => {
  const port = await freePort();
  const pgPort = await freePort();
  // npm's own Node runs npm; the script runs the project's Node from node_modules/.bin.
  const child = spawn('npm', ['run', 'start:dev'], {
    cwd: root,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(pgPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  dev = { child, output: () => output, exited };

  await waitFor(() => count(output, 'Device Cloud Service listening') === 1, 180_000, 'the first start');
  expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
  const first = postmasterPid();
  expect(alive(first)).toBe(true);

  // What tsc --watch does on a source change: write the compiled file again. (Saving a source
  // unchanged is no change to tsc, which compares contents; the test changes no source.)
  const compiled = join(root, 'dist', 'src', 'main.js');
  writeFileSync(compiled, readFileSync(compiled));
  await waitFor(() => count(output, 'Device Cloud Service listening') === 2, 120_000, 'the restart');
  expect(output.split('\n').filter((line) => line.includes('"msg":"Shutting down"') && line.includes('"signal":"SIGTERM"'))).toHaveLength(1);
  const second = postmasterPid();
  expect(second).not.toBe(first);
  expect(alive(first)).toBe(false);
  expect(alive(second)).toBe(true);
  expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);

  process.kill(-child.pid!, 'SIGINT');
  // Every process of the terminal's group (npm, the runner, tsc, node --watch, the service) ends.
  await waitFor(() => !alive(-child.pid!), 15_000, 'every process of the group to end');
  expect(alive(second)).toBe(false);
  expect(await portAccepts(pgPort)).toBe(false);
  expect(await portAccepts(port)).toBe(false);
  expect(output.split('\n').filter((line) => /"level":(40|50|60|"warn"|"error"|"fatal")/.test(line))).toEqual([]);
}, 400_000);
