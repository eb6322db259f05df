import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, resolve } from 'node:path';

/**
 * What the reference dashboard's browser tests share: Debian's chromium (`.ci/run` sets
 * REQUIRE_BROWSER=1, so there the tests run or fail; without chromium they skip, and say so), the
 * Vite build of examples/dashboard, and a static server on an origin of its own.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** `describe` when chromium is there, else `describe.skip` after saying so; fails under REQUIRE_BROWSER. */
export function describeWithBrowser(what: string): jest.Describe {
  const available = existsSync(CHROMIUM);
  if (!available && process.env.REQUIRE_BROWSER) throw new Error(`REQUIRE_BROWSER is set but there is no chromium at ${CHROMIUM}`);
  if (!available) {
    process.stderr.write(`\nSKIPPING ${what}: no chromium at ${CHROMIUM} (apt-get install chromium chromium-driver, or set CHROMIUM_PATH).\n`);
  }
  return available ? describe : describe.skip;
}

/** Builds examples/dashboard into `outDir`, calling the API at `apiUrl` (VITE_API_URL). */
export function buildDashboard(outDir: string, apiUrl: string): Promise<void> {
  return new Promise((done, fail) => {
    const args = ['node_modules/vite/bin/vite.js', 'build', 'examples/dashboard', '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'];
    const child = spawn(process.execPath, args, { env: { ...process.env, VITE_API_URL: apiUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? done() : fail(new Error(`vite build exited with ${code}:\n${output}`))));
  });
}

const CONTENT_TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css' };

/** The files under `root` on 127.0.0.1, at a port of its own: another origin than the API's. */
export async function serveFiles(root: string): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const file = resolve(root, `.${path === '/' ? '/index.html' : path}`);
    if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((closed) => server.close(() => closed())) };
}
