/**
 * `npm run bench:marks`: what the battery-energy marks cost the ingest statement in PostgreSQL,
 * measured without HTTP, Node or the load generator in the way (bench/README.md, "Battery
 * analytics on and off"). On the default bench database (seeded by `npm run bench` first), one
 * connection per statement text (analytics on and off) sends S2's requests, 50 records each for a
 * random device, REQUESTS_PER_STATEMENT of them per statement as group commit would merge them,
 * alternating blocks of 100 statements in both orders; each backend's own CPU time (from
 * /proc/<pid>/stat) is divided by the statements it ran. The first block of each is warm-up.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/shared/database/embedded-postgres.js';
import { INGEST_SQL, INGEST_SQL_WITHOUT_BATTERY_ANALYTICS } from '../src/modules/telemetry/infrastructure/ingest.sql.js';
import { BATTERY_ID, DATABASE, devicesOf, PG_PORT } from './fixtures.js';
import { processCpuUs } from './proc-stats.js';

const RECORDS_PER_REQUEST = 50;
const BLOCKS = 21;
const STATEMENTS_PER_BLOCK = 100;

interface Side {
  name: string;
  text: string;
  client: pg.Client;
  pid: number;
  cpuUs: number;
  statements: number;
}

async function main(): Promise<void> {
  const dataDir = join(process.cwd(), '.data-bench', '100x30');
  if (!existsSync(join(dataDir, 'postgres'))) throw new Error(`no bench database in ${dataDir}: run npm run bench -- --seed-only first`);
  const requestsPerStatement = Number(process.env.REQUESTS_PER_STATEMENT ?? 2);
  const postgres = await startEmbeddedPostgres({ dataDir, port: PG_PORT, persistent: true });
  const sides: Side[] = [];
  try {
    const devices = devicesOf(100).map((device) => device.deviceId);
    const last = new Map<string, number>();
    const argumentsOfOneStatement = () => {
      const ids: string[] = [];
      const timestamps: Date[] = [];
      const metrics: string[] = [];
      for (let request = 0; request < requestsPerStatement; request++) {
        const device = devices[Math.floor(Math.random() * devices.length)];
        const base = Math.max(Date.now(), (last.get(device) ?? 0) + 1);
        last.set(device, base + RECORDS_PER_REQUEST - 1);
        for (let k = 0; k < RECORDS_PER_REQUEST; k++) {
          ids.push(device);
          timestamps.push(new Date(base + k));
          metrics.push(JSON.stringify({ voltage: 50 + Math.random() * 4, current: Math.random() * 24 - 12, soc: Math.random() * 100, temperature: 18 + Math.random() * 10 }));
        }
      }
      return [ids, ids.map(() => BATTERY_ID), timestamps, metrics, new Date()];
    };
    for (const [name, text] of [
      ['on', INGEST_SQL],
      ['off', INGEST_SQL_WITHOUT_BATTERY_ANALYTICS],
    ] as const) {
      const client = new pg.Client({ connectionString: postgres.url(DATABASE) });
      await client.connect();
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      sides.push({ name, text, client, pid, cpuUs: 0, statements: 0 });
    }
    for (let block = 0; block < BLOCKS; block++) {
      for (const side of block % 2 === 0 ? sides : [...sides].reverse()) {
        const before = processCpuUs(side.pid);
        for (let k = 0; k < STATEMENTS_PER_BLOCK; k++) await side.client.query({ name: `marks_${side.name}`, text: side.text, values: argumentsOfOneStatement() });
        if (block === 0) continue;
        side.cpuUs += processCpuUs(side.pid) - before;
        side.statements += STATEMENTS_PER_BLOCK;
      }
    }
    const perStatement = (side: Side) => side.cpuUs / side.statements;
    const [on, off] = sides;
    console.log(`Ingest statement, ${requestsPerStatement} requests of ${RECORDS_PER_REQUEST} records each, ${on.statements} statements per side:`);
    for (const side of sides) console.log(`  analytics ${side.name}: PostgreSQL backend CPU ${Math.round(perStatement(side))} µs per statement`);
    console.log(`  on ÷ off: ${(perStatement(on) / perStatement(off)).toFixed(3)}`);
  } finally {
    for (const side of sides) await side.client.end();
    await postgres.stop();
  }
}

await main();
