/**
 * `npm run bench -- --floor`: S3's answers served by bench/floor-server.ts (JSON and socket only),
 * at the connection counts of S3. Tells how much of a history p99 this machine spends on building
 * and moving the answer alone; no database is started.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { HOST } from './fixtures.js';
import type { BenchOptions } from './options.js';
import { machineInfo } from './proc-stats.js';
import { machineDescription } from './report.js';
import { startServer } from './servers.js';

const FLOOR_PORT = 3192;
const RANGES = ['24h', '7d', '30d'] as const;
const CONNECTIONS = [4, 16] as const;

interface FloorResult {
  range: string;
  connections: number;
  requestsPerSec: number;
  p50: number;
  p99: number;
  bytesPerAnswer: number;
  errors: number;
}

async function measure(url: string, range: string, connections: number, warmupSec: number, durationSec: number): Promise<FloorResult> {
  let unexpected = 0;
  const request: autocannon.Request = {
    method: 'GET',
    path: `/history?range=${range}`,
    onResponse: (status, body) => {
      if (status !== 200 || !body.includes('"points":[{')) unexpected += 1;
    },
  };
  await autocannon({ url, connections, duration: warmupSec, requests: [request] });
  unexpected = 0;
  const result = await autocannon({ url, connections, duration: durationSec, timeout: 10, requests: [request] });
  return {
    range,
    connections,
    requestsPerSec: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    bytesPerAnswer: Math.round(result.throughput.total / Math.max(1, result.requests.total)),
    // autocannon counts time-outs among its errors; `unexpected` every answer that is not a 200 with points.
    errors: result.errors + unexpected,
  };
}

export async function runFloor(root: string, outputDir: string, options: BenchOptions, log: (message: string) => void): Promise<void> {
  const server = await startServer({
    name: 'floor',
    script: join(root, 'dist', 'bench', 'floor-server.js'),
    env: { HOST, PORT: String(FLOOR_PORT) },
    url: `http://${HOST}:${FLOOR_PORT}`,
    readyPath: '/health',
    logDir: outputDir,
  });
  const results: FloorResult[] = [];
  try {
    for (const range of RANGES) {
      for (const connections of CONNECTIONS) {
        const result = await measure(server.url, range, connections, options.warmupSec, options.durationSec);
        log(`  ${range}, ${connections} connections: ${result.requestsPerSec} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.bytesPerAnswer} B per answer, errors ${result.errors}`);
        results.push(result);
      }
    }
  } finally {
    await server.stop();
  }
  const report = [
    `## Floor run ${new Date().toISOString()}`,
    '',
    `- Machine: ${machineDescription(machineInfo())}. Load generator and server share the CPUs.`,
    `- bench/floor-server.ts: S3's answers (4 series; 24 h: 288 points each, 7 d: 168, 30 d: 120) built from numbers in memory and sent; no framework, authentication or database. ${options.warmupSec} s warm-up + ${options.durationSec} s measured per row.`,
    '',
    '| range | connections | req/s | p50 ms | p99 ms | bytes per answer | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...results.map((r) => `| ${r.range} | ${r.connections} | ${r.requestsPerSec.toLocaleString('en-US')} | ${r.p50} | ${r.p99} | ${r.bytesPerAnswer.toLocaleString('en-US')} | ${r.errors} |`),
    '',
  ].join('\n');
  writeFileSync(join(outputDir, 'floor-last-run.md'), report);
  log(`\n${report}`);
  if (results.some((result) => result.errors > 0)) throw new Error('the floor server answered with errors');
}
