/**
 * `npm run bench`: the performance benchmark (not a test). One embedded PostgreSQL, seeded history,
 * the service and the hand-written baseline (bench/baseline-server.ts) side by side, rounds that
 * alternate baseline and service per scenario, and a report of medians and service ÷ baseline
 * ratios on stdout and in test-output/bench/last-run.md. With --soak, the service alone under mixed
 * traffic for a long time instead (bench/soak.ts, test-output/bench/soak-last-run.md). See bench/README.md.
 */
import 'reflect-metadata';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../src/shared/database/embedded-postgres.js';
import { BASELINE_PORT, BENCH_SECRETS, customersOf, DATABASE, devicesOf, HOST, PG_PORT, POOL_SIZE, SERVICE_PORT } from './fixtures.js';
import { runVariant, type RunResult, type Target } from './measure.js';
import { parseOptions, USAGE } from './options.js';
import { machineInfo, resetPeakRss } from './proc-stats.js';
import { renderReport, summarize, type RunInfo } from './report.js';
import { VARIANTS } from './scenarios.js';
import { prepareData } from './seed.js';
import { EventLoopLog, renderSoakReport, runSoak, soakIntervalMs, type SoakInterval, type SoakResult } from './soak.js';
import { killAllChildrenNow, serviceNodeFlags, startServer, type ServerProcess } from './servers.js';
import { runFloor } from './floor.js';
import { checkSqlParity } from './sql-parity.js';
import { fleetOf, IngestClock } from './workloads.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outputDir = join(root, 'test-output', 'bench');

const log = (message: string) => process.stdout.write(`${message}\n`);

let cleanup: (() => Promise<void>) | undefined;
/** Writes the report of the runs finished so far; set once the servers are up. */
let writePartialReport: ((reason: string) => void) | undefined;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help')) {
    log(USAGE);
    return;
  }
  const options = parseOptions(argv);
  if (options.days > 360) throw new Error('--days must stay within the 365-day retention (at most 360)');
  // The service classes the seeding reuses log through Nest's static logger; keep the output to the bench's own.
  Logger.overrideLogger(false);
  mkdirSync(outputDir, { recursive: true });
  if (options.floor) {
    log(`Floor: S3's answers from bench/floor-server.ts, ${options.warmupSec} s warm-up + ${options.durationSec} s measured per row.`);
    await runFloor(root, outputDir, options, log);
    return;
  }
  const startedAt = new Date();
  const variants = options.scenarios.flatMap((scenario) => VARIANTS[scenario]);
  const soakSec = options.soakSec;
  if (soakSec !== undefined) {
    // Each half of the fleet feeds one ingest stream (bench/soak.ts).
    if (options.devices < 2) throw new Error('--soak needs at least 2 devices');
    log(`Soak: ${options.devices} devices x ${options.days} days, the service alone, ${soakSec} s of mixed traffic, figures every ${soakIntervalMs(soakSec) / 1000} s.`);
  } else {
    const estimateMin = Math.round((variants.length * options.rounds * 2 * (options.warmupSec + options.durationSec + 2)) / 6) / 10;
    log(`Benchmark: ${options.devices} devices x ${options.days} days, ${variants.length} variants x ${options.rounds} rounds x 2 servers: about ${estimateMin} min of load after seeding.`);
    await checkSqlParity();
    log('SQL parity: the baseline runs the same statements as the service.');
  }

  const dataDir = join(root, '.data-bench', `${options.devices}x${options.days}`);
  const postgresLog = join(outputDir, 'postgres.log');
  writeFileSync(postgresLog, '');
  let postgres: EmbeddedPostgresHandle | undefined;
  const servers: ServerProcess[] = [];
  let pool: pg.Pool | undefined;
  cleanup = async () => {
    await Promise.allSettled(servers.map((server) => server.stop()));
    killAllChildrenNow();
    await pool?.end().catch(() => undefined);
    await postgres?.stop().catch(() => undefined);
    postgres = undefined;
  };

  try {
    postgres = await startEmbeddedPostgres({ dataDir, port: PG_PORT, persistent: true, onLog: (message) => appendFileSync(postgresLog, message) });
    const postmasterPid = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const seed = await prepareData(postgres.serverUrl, DATABASE, dataDir, { devices: options.devices, days: options.days }, options.reseed, log);
    log(
      seed.reused
        ? `Data: reused ${seed.records.toLocaleString('en-US')} records (reset in ${seed.cleanupSeconds} s).`
        : `Data: seeded ${seed.records.toLocaleString('en-US')} records and ${seed.rollupRows.toLocaleString('en-US')} rollup rows in ${seed.seconds.total} s (${JSON.stringify(seed.seconds)}).`,
    );
    if (options.seedOnly) return;

    const databaseUrl = postgres.url(DATABASE);
    pool = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: 'bench-orchestrator' });
    // PostgreSQL stopping under idle connections must not crash the orchestrator before its cleanup.
    pool.on('error', () => undefined);
    // S4: one release offered to half the fleet (staged rollout), so /ota/latest answers both ways.
    await pool.query(
      `INSERT INTO firmware_releases (id, version, hardware_id, channel, url, sha256, size, release_notes, rollout_percent, min_from_version,
                                      max_failure_percent, paused, auto_paused_at, revoked, published_at, updated_at)
       VALUES ('00000000-0000-4000-8000-000000000001', '0.2.0', NULL, 'stable', 'https://firmware.example.com/gw/0.2.0.bin', repeat('a', 64), 1572864,
               'Bench release', 50, NULL, NULL, false, NULL, false, now(), now())
       ON CONFLICT DO NOTHING`,
    );
    const postgresVersion = `PostgreSQL ${(await pool.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version}`;

    const common = {
      HOST,
      DATABASE_URL: databaseUrl,
      DB_POOL_SIZE: String(POOL_SIZE),
      DEVICE_JWT_SECRET: BENCH_SECRETS.deviceJwtSecret,
      CUSTOMER_JWT_SECRET: BENCH_SECRETS.customerJwtSecret,
      SECRET_PEPPER: BENCH_SECRETS.pepper,
    };
    const serviceServer = {
      name: 'service',
      script: join(root, 'dist', 'src', 'main.js'),
      nodeFlags: serviceNodeFlags(root),
      url: `http://${HOST}:${SERVICE_PORT}`,
      readyPath: '/health/ready',
      logDir: outputDir,
    };
    const serviceEnv = {
      ...common,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      PORT: String(SERVICE_PORT),
      DATA_DIR: join(outputDir, 'service-data'),
      // S1, S2 and S5 drive each simulated gateway hundreds of times faster than a real one (bench/README.md).
      TELEMETRY_MAX_REQUESTS_PER_DEVICE: '1000000',
    };
    const devices = devicesOf(options.devices);
    const fleet = fleetOf(devices, customersOf(options.devices), new Date(seed.t0));
    const clock = new IngestClock(devices.length);

    if (soakSec !== undefined) {
      const eventLoop = new EventLoopLog();
      const service = await startServer({
        ...serviceServer,
        env: { ...serviceEnv, EVENT_LOOP_LOG_MS: String(soakIntervalMs(soakSec)) },
        onStdoutLine: (line) => eventLoop.take(line),
      });
      servers.push(service);
      log(`Service up: pid ${service.pid} on ${service.url}; PostgreSQL postmaster pid ${postmasterPid}. Traffic starts now.`);
      const soakInfo = (): RunInfo => ({ startedAt, finishedAt: new Date(), options, machine: machineInfo(), postgresVersion, poolSize: POOL_SIZE, serviceNodeFlags: serviceServer.nodeFlags, seed, peakRssExact: true });
      const soakReport = join(outputDir, 'soak-last-run.md');
      const intervals: SoakInterval[] = [];
      writePartialReport = (reason) => {
        if (intervals.length === 0) return;
        const partial: SoakResult = { durationSec: soakSec, intervalSec: soakIntervalMs(soakSec) / 1000, intervals };
        writeFileSync(soakReport, renderSoakReport(soakInfo(), partial, reason));
        log(`Partial soak report of ${intervals.length} intervals written to ${soakReport}`);
      };
      const result = await runSoak({ service, eventLoop, fleet, clock, pool, postmasterPid, durationSec: soakSec, log, onInterval: (interval) => intervals.push(interval) });
      writePartialReport = undefined;
      const info = soakInfo();
      const report = renderSoakReport(info, result);
      writeFileSync(soakReport, report);
      writeFileSync(join(outputDir, 'soak-last-run.json'), JSON.stringify({ info, result }, null, 2));
      log(`\n${report}`);
      log(`Soak report written to ${soakReport}`);
      return;
    }

    const baseline = await startServer({
      name: 'baseline',
      script: join(root, 'dist', 'bench', 'baseline-server.js'),
      env: { ...common, PORT: String(BASELINE_PORT) },
      url: `http://${HOST}:${BASELINE_PORT}`,
      readyPath: '/health',
      logDir: outputDir,
    });
    servers.push(baseline);
    const service = await startServer({ ...serviceServer, env: serviceEnv });
    servers.push(service);
    log(`Servers up: baseline pid ${baseline.pid} on ${baseline.url}, service pid ${service.pid} on ${service.url}; PostgreSQL postmaster pid ${postmasterPid}.`);

    const peakRssExact = resetPeakRss(service.pid);
    const context = {
      fleet,
      clock,
      pool,
      postmasterPid,
      warmupSec: options.warmupSec,
      durationSec: options.durationSec,
    };
    const runs: RunResult[] = [];
    const infoNow = (): RunInfo => ({ startedAt, finishedAt: new Date(), options, machine: machineInfo(), postgresVersion, poolSize: POOL_SIZE, serviceNodeFlags: serviceServer.nodeFlags, seed, peakRssExact });
    writePartialReport = (reason) => {
      if (runs.length === 0) return;
      const report = `> **Incomplete run** (${reason}): ${runs.length} of ${variants.length * options.rounds * 2} runs finished.\n\n${renderReport(infoNow(), summarize(variants, runs), runs)}`;
      writeFileSync(join(outputDir, 'last-run.md'), report);
      log(`Partial report of ${runs.length} runs written to ${join(outputDir, 'last-run.md')}`);
    };
    const targets: Array<[Target, ServerProcess]> = [
      ['baseline', baseline],
      ['service', service],
    ];
    for (let round = 1; round <= options.rounds; round++) {
      for (const variant of variants) {
        for (const [target, server] of targets) {
          const run = await runVariant(variant, server, target, round, context);
          runs.push(run);
          writeFileSync(join(outputDir, 'last-run.json'), JSON.stringify({ options, seed, runs }, null, 2));
          const head = run.loads[0];
          const extra = run.loads
            .slice(1)
            .map((load) => `; ${load.name} ${Math.round(load.rps)} req/s p99 ${load.p99Ms} ms non-2xx ${load.non2xx}`)
            .join('');
          const integrity = head.integrity ? ` stored=acked ${head.integrity.ok ? 'yes' : 'NO'} (${head.integrity.stored}/${head.integrity.acknowledged}+${head.integrity.committedUnanswered})` : '';
          log(
            `[round ${round} ${variant.id} ${target}] ${Math.round(head.rps)} req/s p50 ${head.p50Ms} p99 ${head.p99Ms} ms non-2xx ${head.non2xx} errors ${head.errors}; ` +
              `CPU µs/req server ${Math.round(run.serverCpuUsPerRequest)} PostgreSQL ${Math.round(run.postgresCpuUsPerRequest)}; peak RSS ${Math.round(run.peakRssMb)} MB; other CPU ${(run.otherCpuShare * 100).toFixed(1)} %${integrity}${extra}`,
          );
        }
      }
    }

    writePartialReport = undefined;
    const info = infoNow();
    const report = renderReport(info, summarize(variants, runs), runs);
    writeFileSync(join(outputDir, 'last-run.md'), report);
    writeFileSync(join(outputDir, 'last-run.json'), JSON.stringify({ info, runs }, null, 2));
    log(`\n${report}`);
    log(`Report written to ${join(outputDir, 'last-run.md')}`);
  } finally {
    writePartialReport?.('stopped by an error');
    await cleanup();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log(`\n${signal}: stopping the servers and PostgreSQL…`);
    try {
      writePartialReport?.(`stopped by ${signal}`);
    } catch {
      // the report is a courtesy; stopping matters more
    }
    killAllChildrenNow();
    void (cleanup?.() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}
process.on('exit', killAllChildrenNow);

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`Benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
