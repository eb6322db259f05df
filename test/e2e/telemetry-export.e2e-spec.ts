import { SchedulerRegistry } from '@nestjs/schedule';
import { get, type ClientRequest, type IncomingMessage } from 'node:http';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { AlertMonitor } from '../../src/modules/alerts/index.js';
import { BatteryEnergy } from '../../src/modules/batteries/index.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { liveBytes } from '../support/live-memory.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { ingestAll, iso, telemetryRows, type TelemetryRecordBody, type TelemetryRow } from '../support/telemetry.js';
import { ExportSlots } from '../../src/modules/telemetry/application/export-slots.js';
import { DatabaseConnection } from '../../src/shared/database/database-connection.js';

/*
 * GET /api/v1/dashboard/devices/{deviceId}/telemetry/export: 100,000 records streamed as CSV,
 * parsed back and compared with the stored records; memory that stays flat while they stream; a
 * client that stops reading makes the cursor wait, one that goes away gives its connection back;
 * who may export, bad ranges, and the caps on exports running at once.
 *
 * The records go in through the API (batches of 500, four uploads at a time), not by SQL: the
 * export takes its columns from the rollup tables, which only ingest maintains.
 */

const BATTERIES = ['main', 'pack-2:b.c_1'];
const RECORDS = 100_000;
const STEP_MS = 10_000;
/** Not on a 5-minute boundary, so the range has raw edges as well as rollup slots. */
const START = Math.floor((Date.now() - 7 * 86_400_000) / 300_000) * 300_000 + 123_456;
const FROM = iso(START);
const TO = iso(START + (RECORDS / BATTERIES.length) * STEP_MS);
/** Two records with a metric no other has: one in the middle of a 5-minute slot, one in the middle of the data. */
const RARE_EDGE = 2000;
const RARE_MIDDLE = 50_001;
const METRICS = ['cellVoltageMax', 'cellVoltageMin', 'current', 'power', 'soc', 'temperature', 'voltage'];

const recordAt = (n: number) => ({ at: START + Math.floor(n / BATTERIES.length) * STEP_MS, batteryId: BATTERIES[n % BATTERIES.length] });
/** The start of the UTC day of record n. */
const dayOf = (n: number) => Math.floor(recordAt(n).at / 86_400_000) * 86_400_000;

/** Record n of the upload: two batteries at every instant; some lack a metric; values of every shape JSON writes. */
function theRecord(n: number): TelemetryRecordBody {
  const metrics: Record<string, number> = { soc: (n % 1000) / 10, voltage: 12 + (n % 97) / 100, power: n % 13 === 0 ? 0 : -((n % 5000) * 1.25) };
  if (n % 7 !== 0) metrics.temperature = 20 + (n % 31) / 3;
  if (n % 11 !== 0) metrics.current = n % 17 === 0 ? 1e-7 : n % 19 === 0 ? 1e12 : -(n % 400) / 8;
  if (n === RARE_EDGE) metrics.cellVoltageMin = 3.301;
  if (n === RARE_MIDDLE) metrics.cellVoltageMax = 3.4;
  const { at, batteryId } = recordAt(n);
  return { ts: iso(at), batteryId, metrics };
}

const theRecords = () => Array.from({ length: RECORDS }, (_, n) => theRecord(n));

/**
 * What the records sent, not the database, say the export of a range must be: the test's own
 * oracle for the columns. Made again from theRecord on each call rather than kept: 100,000 records
 * held by this process would make every full collection of the memory test below slow.
 */
function expectedCsv(from: number, to: number, batteryId?: string): string {
  const records = theRecords().filter(
    (record) => Date.parse(record.ts) >= from && Date.parse(record.ts) < to && (batteryId === undefined || record.batteryId === batteryId),
  );
  const metrics = [...new Set(records.flatMap((record) => Object.keys(record.metrics)))].sort();
  const lines = records.map((record) => [record.ts, record.batteryId, ...metrics.map((metric) => (metric in record.metrics ? JSON.stringify(record.metrics[metric]) : ''))].join(','));
  return [['ts', 'batteryId', ...metrics].join(','), ...lines].map((line) => `${line}\r\n`).join('');
}

/** An RFC 4180 parser fed chunk by chunk: fields quoted or not, doubled quotes, CRLF line ends. */
class CsvParser {
  private field = '';
  private row: string[] = [];
  private quoted = false;
  private afterQuote = false;
  private pendingCr = false;
  rows: string[][] = [];

  push(chunk: string): void {
    for (const char of chunk) {
      if (this.pendingCr) {
        this.pendingCr = false;
        if (char !== '\n') throw new Error('a CR outside quotes must start CRLF');
        this.endRow();
        continue;
      }
      if (this.quoted) {
        if (char === '"') {
          this.quoted = false;
          this.afterQuote = true;
        } else this.field += char;
      } else if (char === '"') {
        if (this.afterQuote) this.field += '"';
        else if (this.field !== '') throw new Error('a quote inside an unquoted field');
        this.quoted = true;
        this.afterQuote = false;
      } else {
        this.afterQuote = false;
        if (char === ',') this.endField();
        else if (char === '\r') this.pendingCr = true;
        else if (char === '\n') throw new Error('a line must end in CRLF');
        else this.field += char;
      }
    }
  }

  /** The rows complete so far; the parser forgets them. */
  take(): string[][] {
    const rows = this.rows;
    this.rows = [];
    return rows;
  }

  /** Whether the text ended at the end of a line (the last one included). */
  get atLineStart(): boolean {
    return !this.quoted && !this.pendingCr && this.field === '' && this.row.length === 0;
  }

  private endField(): void {
    this.row.push(this.field);
    this.field = '';
  }

  private endRow(): void {
    this.endField();
    this.rows.push(this.row);
    this.row = [];
  }
}

/**
 * An export read as it comes, on a connection of its own (node:http, no keep-alive agent). Not
 * through t.api: the suite's middlewares (contract check, leak scan) read every answer whole
 * before handing it over, which is what these tests must not do; the exports that go through
 * t.api are checked by both. Not through fetch either: an aborted fetch leaves undici a fresh
 * idle connection that keeps the server from closing for a minute.
 */
async function streamExport(t: TestApp, who: SignedIn, deviceId: string, query: Record<string, string>): Promise<{ request: ClientRequest; response: IncomingMessage }> {
  const url = new URL(`/api/v1/dashboard/devices/${encodeURIComponent(deviceId)}/telemetry/export`, t.baseUrl);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  const request = get(url, { headers: who.headers, agent: false });
  const response = await new Promise<IncomingMessage>((resolve, reject) => request.once('response', resolve).once('error', reject));
  return { request, response };
}

/** What the export must write for one stored record. */
function expectedRow(record: TelemetryRow, metrics: string[]): string[] {
  return [record.ts.toISOString(), record.battery_id, ...metrics.map((metric) => (record.metrics[metric] === undefined ? '' : JSON.stringify(record.metrics[metric])))];
}

/** Sessions of the service inside an export's transaction (running a statement of it, or waiting for the client between two). */
async function exportSessions(t: TestApp): Promise<Array<{ state: string; query: string }>> {
  const { rows } = await t.db.query<{ state: string; query: string }>(
    `SELECT state, query FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'device-cloud' AND state <> 'idle' AND query LIKE '%telemetry\\_export%'`,
  );
  return rows;
}

/** The export's session with when its state last changed: the same `since` a second later means no statement ran in between. */
async function exportActivity(t: TestApp): Promise<Array<{ state: string; since: string; query: string }>> {
  const { rows } = await t.db.query<{ state: string; since: string; query: string }>(
    `SELECT state, state_change::text AS since, query FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'device-cloud' AND state <> 'idle' AND query LIKE '%telemetry\\_export%'`,
  );
  return rows;
}

function poolInUse(t: TestApp): number {
  const usage = t.app.get(DatabaseConnection).poolUsage();
  if (!usage) throw new Error('the pool is not open');
  return usage.total - usage.idle;
}

describe('telemetry export (CSV)', () => {
  let t: TestApp;
  let alice: SignedIn;
  let bob: SignedIn;
  let admin: SignedIn;
  let deviceId: string;
  let bobsDevice: string;
  const held: ClientRequest[] = [];

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, DB_POOL_SIZE: '6', EXPORT_MAX_PER_USER: '2', EXPORT_MAX_CONCURRENT: '3', TELEMETRY_MAX_REQUESTS_PER_DEVICE: '100000' });
    [alice, bob, admin] = await Promise.all([aCustomer(t), aCustomer(t), anAdmin(t)]);
    const device = await aClaimedDevice(t, alice);
    deviceId = device.body.deviceId;
    bobsDevice = (await aClaimedDevice(t, bob)).body.deviceId;

    const records = theRecords();
    const started = performance.now();
    const parallel = 4;
    const share = Math.ceil(records.length / parallel / 500) * 500;
    await Promise.all(Array.from({ length: parallel }, (_, k) => ingestAll(t.api, device.registered.accessToken, records.slice(k * share, (k + 1) * share))));
    process.stderr.write(`telemetry-export: ${records.length} records ingested through the API in ${Math.round(performance.now() - started)} ms\n`);
  }, 180_000);

  /** An export of every record whose answer has begun and that nobody reads: it holds its slot and its connection. */
  async function aHeldExport(who: SignedIn): Promise<ClientRequest> {
    const { request, response } = await streamExport(t, who, deviceId, { from: FROM, to: TO });
    held.push(request);
    expect(response.statusCode).toBe(200);
    return request;
  }

  afterEach(async () => {
    for (const request of held.splice(0)) request.destroy();
    await eventually(async () => expect({ sessions: await exportSessions(t), slots: t.app.get(ExportSlots).inUse }).toEqual({ sessions: [], slots: 0 }));
  });

  afterAll(async () => {
    await t?.close();
  });

  it(
    'streams 100,000 records that parse back equal to the stored ones, in (ts, batteryId) order, with flat memory',
    async () => {
      const stored = await telemetryRows(t.db, deviceId);
      expect(stored).toHaveLength(RECORDS);
      // The rows the export must write, as one string (fields joined by NUL, each row ended by SOH),
      // and the stored records freed: 100,000 objects with a Date and an object of metrics each
      // would make every full collection below, and so the test, several times slower.
      const expected = stored.map((record) => `${expectedRow(record, METRICS).join('\u0000')}\u0001`).join('');
      stored.splice(0);

      // What the upload set off in the background, done first, so only the export's own memory is
      // measured: alert evaluation of the 100,000 records, and (they carry current) the energy of
      // their hours (BatteryEnergy), whose schedule is then stopped.
      await t.app.get(AlertMonitor).idle();
      t.app.get(SchedulerRegistry).deleteInterval('battery-energy');
      await t.app.get(BatteryEnergy).drain();
      expect((await t.db.query('SELECT count(*)::int AS n FROM battery_energy_stale')).rows[0].n).toBe(0);
      // Buffers the upload left behind (~15 MB of them, freed once its keep-alive connections have
      // been idle for seconds) must be gone before the baseline, not freed during the export, where
      // the drop counted as growth (12-16 MiB in some runs, 0.7 with this). At least 6 s, then
      // until two collections agree.
      const settle = async () => {
        let previous = liveBytes();
        for (let i = 0; i < 40; i++) {
          await new Promise((resume) => setTimeout(resume, 250));
          const now = liveBytes();
          if (i >= 23 && Math.abs(now - previous) < 256 * 1024) return now;
          previous = now;
        }
        return previous;
      };
      const baseline = await settle();
      // Sampled on a timer, not only between reads, so a peak inside the server's work (a large result being parsed) is
      // seen. Each sample is a full collection of the worker's heap, which earlier test files can have left at hundreds
      // of MB: the next sample waits at least three times as long as this one took, so collections stop the export
      // (served by this same process) for at most a quarter of its time.
      let peak = baseline;
      const sample = () => {
        const started = performance.now();
        peak = Math.max(peak, liveBytes());
        sampler = setTimeout(sample, Math.max(500, 3 * (performance.now() - started)));
      };
      let sampler = setTimeout(sample, 500);
      const { request, response } = await streamExport(t, alice, deviceId, { from: FROM, to: TO });
      held.push(request);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
      // Not on whole seconds, so the file name keeps the milliseconds.
      expect(response.headers['content-disposition']).toBe(`attachment; filename="${deviceId}-${FROM.replace(/[-:]/g, '')}-${TO.replace(/[-:]/g, '')}.csv"`);

      const parser = new CsvParser();
      const decoder = new TextDecoder();
      let header: string[] | undefined;
      let index = 0;
      let cursor = 0;
      let bytes = 0;
      for await (const chunk of response as AsyncIterable<Buffer>) {
        bytes += chunk.byteLength;
        parser.push(decoder.decode(chunk, { stream: true }));
        for (const row of parser.take()) {
          if (!header) {
            header = row;
            expect(header).toEqual(['ts', 'batteryId', ...METRICS]);
            continue;
          }
          // toEqual per row would cost seconds over 100,000 rows: compare the joined text, report the first difference.
          const end = expected.indexOf('\u0001', cursor);
          const wanted = end < 0 ? undefined : expected.slice(cursor, end);
          if (row.join('\u0000') !== wanted) expect({ index, row }).toEqual({ index, row: wanted?.split('\u0000') });
          cursor = end + 1;
          index += 1;
        }
      }
      clearTimeout(sampler);
      expect(parser.atLineStart).toBe(true);
      expect(index).toBe(RECORDS);
      await eventually(async () => expect(await exportSessions(t)).toEqual([]));
      await eventually(() => expect(poolInUse(t)).toBe(0));
      // What the export held: its peak over the lower of before and after it (a buffer the suite's own
      // queries left behind can make either one the higher).
      const growth = peak - Math.min(baseline, liveBytes());
      process.stderr.write(`telemetry-export: ${bytes} bytes of CSV; live memory grew at most ${(growth / 1048576).toFixed(1)} MiB while streaming\n`);
      // Holding the records of the answer at once takes several times its size (each one an object with a Date and an
      // object of metrics): with every record in one FETCH this measured 44 MiB; streaming, 1.3-4.2 MiB across runs.
      expect(bytes).toBeGreaterThan(7_000_000);
      expect(growth).toBeLessThan(2 * bytes);
    },
    240_000,
  );

  it('a client that goes away mid-stream: the cursor is closed and the connection goes back to the pool', async () => {
    const { request, response } = await streamExport(t, alice, deviceId, { from: FROM, to: TO });
    expect(response.statusCode).toBe(200);
    await (response[Symbol.asyncIterator]() as AsyncIterator<Buffer>).next();
    expect(await exportSessions(t)).toHaveLength(1);
    expect(poolInUse(t)).toBeGreaterThanOrEqual(1);

    request.destroy();

    await eventually(async () => expect(await exportSessions(t)).toEqual([]));
    await eventually(() => expect(poolInUse(t)).toBe(0));
    expect(t.app.get(ExportSlots).inUse).toBe(0);
    // Its slot is free again: the account may run two at once.
    await aHeldExport(alice);
    await aHeldExport(alice);
    expect(await exportSessions(t)).toHaveLength(2);
  });

  it('a client that stops reading: the export waits for it with its cursor open and fetches no further', async () => {
    await aHeldExport(alice);

    // Once the socket buffers are full (about 4 MB of the 7.3 MB here), no statement runs on the export's session any more.
    await eventually(async () => {
      const before = await exportActivity(t);
      await new Promise((resume) => setTimeout(resume, 1000));
      expect(await exportActivity(t)).toEqual([{ state: 'idle in transaction', since: before[0]?.since, query: expect.stringMatching(/^FETCH FORWARD \d+ FROM telemetry_export$/) }]);
    }, 30_000);
    expect(t.app.get(ExportSlots).inUse).toBe(1);
  });

  it('through the generated client: the columns are the metrics of the records in the range and battery, exactly, at the edges as in the middle', async () => {
    const exportOf = (query: { from: string; to: string; batteryId?: string }) =>
      t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', { params: { path: { deviceId }, query: { ...query, format: 'csv' } }, headers: alice.headers, parseAs: 'text' });
    const ranges: Array<[from: number, to: number, batteryId?: string]> = [
      [START, START + 2 * STEP_MS],
      [START, START + 2 * STEP_MS, BATTERIES[1]],
      // Only record n = 11 (the second battery at the sixth instant), which lacks current: no such column.
      [START + 5 * STEP_MS, START + 5 * STEP_MS + 1, BATTERIES[1]],
      // The one record with cellVoltageMin, alone; then from just after it, in the same 5-minute slot, to two days later.
      [recordAt(RARE_EDGE).at, recordAt(RARE_EDGE).at + 1],
      [recordAt(RARE_EDGE).at + 1, recordAt(RARE_EDGE).at + 2 * 86_400_000],
      // cellVoltageMax in a whole day of the range, which the daily rollups answer; then a range that ends on it.
      [dayOf(RARE_MIDDLE) - 1, dayOf(RARE_MIDDLE) + 86_400_000 + 1],
      [dayOf(RARE_MIDDLE), recordAt(RARE_MIDDLE).at],
    ];
    for (const [from, to, batteryId] of ranges) {
      const { data, response } = await exportOf({ from: iso(from), to: iso(to), ...(batteryId ? { batteryId } : {}) });
      expect({ from: iso(from), to: iso(to), batteryId, status: response.status, text: data }).toEqual({ from: iso(from), to: iso(to), batteryId, status: 200, text: expectedCsv(from, to, batteryId) });
    }
    expect(expectedCsv(recordAt(RARE_EDGE).at, recordAt(RARE_EDGE).at + 1)).toMatch(/^ts,batteryId,cellVoltageMin,/);
    expect(expectedCsv(recordAt(RARE_EDGE).at + 1, recordAt(RARE_EDGE).at + 2 * 86_400_000)).not.toMatch(/cellVoltageMin/);
    expect(expectedCsv(START + 5 * STEP_MS, START + 5 * STEP_MS + 1, BATTERIES[1])).not.toMatch(/current/);
    expect(expectedCsv(dayOf(RARE_MIDDLE) - 1, dayOf(RARE_MIDDLE) + 86_400_000 + 1)).toMatch(/^ts,batteryId,cellVoltageMax,/);
    expect(expectedCsv(dayOf(RARE_MIDDLE), recordAt(RARE_MIDDLE).at)).not.toMatch(/cellVoltageMax/);

    const { data: empty, response: emptyResponse } = await exportOf({ from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' });
    expect(empty).toBe('ts,batteryId\r\n');
    expect(emptyResponse.headers.get('content-disposition')).toBe(`attachment; filename="${deviceId}-20260101T000000Z-20260102T000000Z.csv"`);
  });

  it('another customer gets 404 for the device, as for one that does not exist; an administrator may export it', async () => {
    const query = { from: FROM, to: iso(START + STEP_MS) };
    const asBob = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', { params: { path: { deviceId }, query }, headers: bob.headers, parseAs: 'text' });
    expectProblem(asBob, 404, 'NOT_FOUND');
    const unknown = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', { params: { path: { deviceId: 'gw-no-such-device' }, query }, headers: alice.headers, parseAs: 'text' });
    expectProblem(unknown, 404, 'NOT_FOUND');
    const ofBobsOwn = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', { params: { path: { deviceId: bobsDevice }, query }, headers: alice.headers, parseAs: 'text' });
    expectProblem(ofBobsOwn, 404, 'NOT_FOUND');
    const unauthenticated = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', { params: { path: { deviceId }, query }, parseAs: 'text' });
    expectProblem(unauthenticated, 401, 'UNAUTHORIZED');

    const asAdmin = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', { params: { path: { deviceId }, query }, headers: admin.headers, parseAs: 'text' });
    expect(asAdmin.data).toBe(expectedCsv(START, START + STEP_MS));
  });

  it.each([
    ['from after to', { from: iso(START + STEP_MS), to: FROM }, 'from'],
    ['from equal to to', { from: FROM, to: FROM }, 'from'],
    ['a range of more than 366 days', { from: iso(START - 367 * 86_400_000), to: FROM }, 'to'],
    ['a from that is no instant', { from: 'yesterday' }, 'from'],
    ['a to without a zone', { to: '2026-11-21T12:00:00' }, 'to'],
    ['a batteryId of another shape', { batteryId: 'main,pack' }, 'batteryId'],
    ['another format', { format: 'xlsx' }, 'format'],
  ])('%s: 400 naming the field, and no export runs', async (_name, query, field) => {
    const result = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', {
      params: { path: { deviceId }, query: query as { from?: string; to?: string; batteryId?: string; format?: 'csv' } },
      headers: alice.headers,
      parseAs: 'text',
    });
    expect(fieldsOf(expectProblem(result, 400, 'VALIDATION_FAILED'))).toEqual([field]);
    expect({ sessions: await exportSessions(t), slots: t.app.get(ExportSlots).inUse }).toEqual({ sessions: [], slots: 0 });
  });

  it('two exports at once per account and three per instance: the next is 429 with Retry-After, until one ends', async () => {
    const another = (who: SignedIn) =>
      t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', { params: { path: { deviceId }, query: { from: FROM, to: iso(START + STEP_MS) } }, headers: who.headers, parseAs: 'text' });

    const first = await aHeldExport(alice);
    await aHeldExport(alice);
    const perAccount = await another(alice);
    expect(expectProblem(perAccount, 429, 'TOO_MANY_EXPORTS').detail).toMatch(/2 exports/);
    expect(perAccount.response.headers.get('retry-after')).toBe('10');

    await aHeldExport(admin);
    const perInstance = await another(admin);
    expectProblem(perInstance, 429, 'TOO_MANY_EXPORTS');
    expect(perInstance.response.headers.get('retry-after')).toBe('10');
    expect(await exportSessions(t)).toHaveLength(3);

    first.destroy();
    await eventually(async () => expect(await exportSessions(t)).toHaveLength(2));
    const afterOneEnded = await another(alice);
    expect(afterOneEnded.response.status).toBe(200);
    expect(afterOneEnded.data).toBe(expectedCsv(START, START + STEP_MS));
  });
});
