/**
 * npm run start:dev: tsc --watch compiles src/ to dist/ on every change, and node --watch restarts
 * the service whenever the compiled files change.
 *
 * node --watch, unlike nest start --watch and the process-tree killers of tsc-watch or concurrently,
 * signals the service alone (SIGTERM) and waits for it to exit before starting the next one: the
 * service then stops its embedded PostgreSQL after its own connections, and the next one finds the
 * port and DATA_DIR free. Ctrl-C reaches the three processes at once; PostgreSQL, in a process
 * group of its own, is stopped by the service.
 */
import { spawn } from 'node:child_process';

const node = process.execPath;
const compiler = spawn(node, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--watch', '--preserveWatchOutput'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
let service;

compiler.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  // The first build is written: start the service on it (later builds restart it through node --watch).
  if (!service && chunk.toString().includes('Watching for file changes')) {
    service = spawn(node, ['--watch', '--watch-preserve-output', '--enable-source-maps', 'dist/src/main.js'], {
      stdio: 'inherit',
      // No load balancer to wait for: a restart need not keep the old instance listening for 2 s.
      env: { SHUTDOWN_DELAY_MS: '0', ...process.env },
    });
    service.on('exit', (code, signal) => {
      compiler.kill('SIGTERM');
      process.exitCode = code ?? (signal ? 1 : 0);
    });
  }
});
compiler.on('exit', (code) => {
  if (!service) process.exitCode = code ?? 1;
});

// Ctrl-C: the terminal signals every process of the group; this one waits for the others.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => {
  service?.kill('SIGTERM');
  compiler.kill('SIGTERM');
});
