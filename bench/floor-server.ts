/**
 * The floor under S3: a bare node:http server that does only the last step of a history answer —
 * turn four series of numbers (what PostgreSQL hands the service) into the API's JSON and send it.
 * No framework, no authentication, no database. Whatever latency it shows at a given concurrency,
 * no server that builds the same answers per request can show less on this machine.
 */
import { createServer } from 'node:http';
import type { SeriesRow } from '../src/modules/telemetry/domain/telemetry-history.queries.js';
import { toSeries } from '../src/modules/telemetry/application/telemetry-history.service.js';
import { runsOf } from '../src/modules/telemetry/domain/history-series.js';
import { historyJson } from '../src/modules/telemetry/http/history-json.js';

const METRICS = [
  { name: 'current', base: 0, swing: 12, noise: 0.3, decimals: 2 },
  { name: 'soc', base: 55, swing: 40, noise: 0, decimals: 1 },
  { name: 'temperature', base: 23, swing: 5, noise: 0.2, decimals: 2 },
  { name: 'voltage', base: 52, swing: 1.2, noise: 0.05, decimals: 3 },
];
const SAMPLES_PER_POINT = 30;

/** Aggregates of 30 samples per point, rounded as the bench's seeded records are, so the numbers print as long as real ones. */
function columnsOf(points: number, bucketSec: number, end: number): SeriesRow[] {
  return METRICS.map((metric, m) => {
    const columns: SeriesRow = { battery_id: 'main', metric: metric.name, ts: [], avg: [], min: [], max: [], count: [] };
    for (let i = 0; i < points; i++) {
      const ts = end - (points - i) * bucketSec;
      const samples = Array.from({ length: SAMPLES_PER_POINT }, (_, s) => {
        const value = metric.base + metric.swing * Math.sin((ts + s * 10) / 5400 + m) + metric.noise * Math.random();
        return Math.round(value * 10 ** metric.decimals) / 10 ** metric.decimals;
      });
      columns.ts.push(ts);
      columns.avg.push(samples.reduce((sum, value) => sum + value, 0) / samples.length);
      columns.min.push(Math.min(...samples));
      columns.max.push(Math.max(...samples));
      columns.count.push(samples.length);
    }
    return columns;
  });
}

/** The service's last step, per request: TelemetryHistoryService's toSeries, then the answer's text (historyJson). */
function answer(rows: SeriesRow[], bucketSec: number): string {
  const first = rows[0].ts[0];
  const last = rows[0].ts[rows[0].ts.length - 1] + bucketSec;
  const { series } = toSeries(rows.map((row) => runsOf(row, bucketSec)));
  return historyJson({ kind: 'buckets', deviceId: 'bench-00000', from: new Date(first * 1000), to: new Date(last * 1000), bucketSec, series, etag: null });
}

const end = Math.floor(Date.now() / 86_400_000) * 86_400;
/** The auto buckets of the S3 ranges: 24 h → 5 min, 7 d → 1 h, 30 d → 6 h. */
const SHAPES = new Map([
  ['24h', { points: 288, bucketSec: 300 }],
  ['7d', { points: 168, bucketSec: 3600 }],
  ['30d', { points: 120, bucketSec: 21_600 }],
]);
const prepared = new Map([...SHAPES].map(([range, shape]) => [range, { ...shape, series: columnsOf(shape.points, shape.bucketSec, end) }]));

createServer((request, response) => {
  if (request.url === '/health') {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    return;
  }
  const shape = prepared.get(new URL(request.url ?? '/', 'http://floor').searchParams.get('range') ?? '');
  if (!shape) response.writeHead(404).end();
  else response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(answer(shape.series, shape.bucketSec));
}).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
