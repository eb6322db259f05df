import type pg from 'pg';
import { TelemetryRecordStore, type WriteResult } from '../../src/modules/telemetry/domain/telemetry-record.store.js';
import { DatabaseUnavailableError } from '../../src/shared/database/database-errors.js';
import { registerDevice } from '../support/builders.js';
import { ADMIN_SETTINGS, anAdmin } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import {
  DAY,
  HOUR,
  MINUTE,
  expectSeries,
  expectedRollup,
  expectedSeries,
  history,
  ingest,
  ingestRaw,
  iso,
  latestRows,
  rollupRows,
  telemetryRows,
  type TelemetryRecordBody,
} from '../support/telemetry.js';

/**
 * One gateway must never make another gateway's uploads fail. Metric values
 * outside the documented bounds (0, or a magnitude from 1e-12 to 1e12) are rejected per record,
 * and a merged ingest statement that fails anyway is split so that only the guilty request fails.
 */
describe('telemetry: extreme values and flush isolation', () => {
  let t: TestApp;
  let writer: TelemetryRecordStore;
  const now = Date.now();
  const STATEMENT_TIMEOUT_MS = 2000;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS), REGISTRATION_MAX_PER_ADDRESS: '1000' });
    writer = t.app.get(TelemetryRecordStore);
  });
  afterAll(() => t.close());

  const countRows = async (db: pg.Pool, deviceId: string) => (await telemetryRows(db, deviceId)).length;
  /** Records as the service hands them to the writer (after admit). */
  const writerRecords = (records: TelemetryRecordBody[]) => records.map((record) => ({ ts: new Date(record.ts), batteryId: record.batteryId ?? 'main', metrics: record.metrics }));
  const someRecords = (count: number, salt: number, offsetMs = 0): TelemetryRecordBody[] =>
    Array.from({ length: count }, (_, i) => ({ ts: iso(now - 30 * MINUTE + offsetMs + i * 1000), metrics: { voltage: 48 + salt + i / 10, soc: i } }));
  /** Two values whose sum overflows float8, in one 5-minute slot: the ingest statement fails (22003) if they ever reach it. */
  const poison = (offsetMs = 0): TelemetryRecordBody[] => [
    { ts: iso(Math.floor((now - 20 * MINUTE) / 300_000) * 300_000 + offsetMs), metrics: { voltage: 1.7e308 } },
    { ts: iso(Math.floor((now - 20 * MINUTE) / 300_000) * 300_000 + offsetMs + 1000), metrics: { voltage: 1.7e308 } },
  ];

  describe('the writer (group commit), bypassing admit', () => {
    it('a flush holding one request whose records make the statement fail: only that request fails, every other one is stored and answered', async () => {
      const devices = await Promise.all(Array.from({ length: 8 }, () => registerDevice(t.api)));
      const [attacker, ...victims] = devices;
      const sent = victims.map((_, v) => someRecords(10, v));

      // The first write runs alone; everything written meanwhile (in this same tick) waits and goes out in one merged statement.
      const first = writer.write(victims[0].deviceId, writerRecords(sent[0]), new Date());
      const merged = [
        writer.write(victims[1].deviceId, writerRecords(sent[1]), new Date()),
        writer.write(victims[2].deviceId, writerRecords(sent[2]), new Date()),
        writer.write(attacker.deviceId, writerRecords(poison()), new Date()),
        ...victims.slice(3).map((victim, v) => writer.write(victim.deviceId, writerRecords(sent[v + 3]), new Date())),
      ];
      const outcomes = await Promise.allSettled([first, ...merged]);

      const attackerOutcome = outcomes.splice(3, 1)[0];
      expect(attackerOutcome).toEqual({ status: 'rejected', reason: expect.objectContaining({ code: '22003' }) });
      expect(outcomes).toEqual(victims.map(() => ({ status: 'fulfilled', value: { inserted: 10, conflicting: [] } })));
      for (const [v, victim] of victims.entries()) {
        expect(await countRows(t.db, victim.deviceId)).toBe(10);
        expect(await rollupRows(t.db, victim.deviceId)).toEqual(expectedRollup(sent[v]));
      }
      expect(await countRows(t.db, attacker.deviceId)).toBe(0);
      expect(await latestRows(t.db, attacker.deviceId)).toEqual([]);
    });

    it('two guilty requests among many: both fail, each of the others is stored once with its own counts', async () => {
      const devices = await Promise.all(Array.from({ length: 10 }, () => registerDevice(t.api)));
      const guilty = new Set([devices[2].deviceId, devices[7].deviceId]);
      const warmUp = await registerDevice(t.api);
      const sent = devices.map((device, d) => (guilty.has(device.deviceId) ? poison(d * 10_000) : someRecords(5, d, 5 * MINUTE)));

      const first = writer.write(warmUp.deviceId, writerRecords(someRecords(3, 0)), new Date());
      // A request repeated inside the flush: its copy is a duplicate whichever half stores it first.
      const repeated = writer.write(devices[0].deviceId, writerRecords(sent[0]), new Date());
      const outcomes = await Promise.allSettled([...devices.map((device, d) => writer.write(device.deviceId, writerRecords(sent[d]), new Date())), first]);

      expect(outcomes.pop()).toEqual({ status: 'fulfilled', value: { inserted: 3, conflicting: [] } });
      devices.forEach((device, d) => {
        if (guilty.has(device.deviceId)) expect(outcomes[d]).toEqual({ status: 'rejected', reason: expect.objectContaining({ code: '22003' }) });
        else if (d > 0) expect(outcomes[d]).toEqual({ status: 'fulfilled', value: { inserted: 5, conflicting: [] } });
      });
      const copies = [(await repeated).inserted, (outcomes[0] as PromiseFulfilledResult<WriteResult>).value.inserted];
      expect(copies.sort()).toEqual([0, 5]);
      for (const [d, device] of devices.entries()) {
        expect(await countRows(t.db, device.deviceId)).toBe(guilty.has(device.deviceId) ? 0 : 5);
        if (!guilty.has(device.deviceId)) expect(await rollupRows(t.db, device.deviceId)).toEqual(expectedRollup(sent[d]));
      }
    });

    it('a database that cannot serve fails every request of the flush at once: no split, no retry', async () => {
      const devices = await Promise.all(Array.from({ length: 6 }, () => registerDevice(t.api)));
      const [warmUp, locked, ...others] = devices;
      // A session holding the device row makes the merged statement wait until statement_timeout (57014: unavailable).
      const blocker = await t.db.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query('SELECT 1 FROM devices WHERE device_id = $1 FOR UPDATE', [locked.deviceId]);

        const started = performance.now();
        const first = writer.write(warmUp.deviceId, writerRecords(someRecords(3, 1)), new Date());
        const outcomes = await Promise.allSettled([locked, ...others].map((device, d) => writer.write(device.deviceId, writerRecords(someRecords(4, d)), new Date())));
        const elapsed = performance.now() - started;

        expect(await first).toEqual({ inserted: 3, conflicting: [] });
        for (const outcome of outcomes) expect(outcome).toEqual({ status: 'rejected', reason: expect.any(DatabaseUnavailableError) });
        // A split would have run at least three more statements into the same lock, each waiting the full timeout.
        expect(elapsed).toBeGreaterThanOrEqual(STATEMENT_TIMEOUT_MS - 100);
        expect(elapsed).toBeLessThan(2 * STATEMENT_TIMEOUT_MS);
      } finally {
        await blocker.query('ROLLBACK');
        blocker.release();
      }
      for (const device of [locked, ...others]) expect(await countRows(t.db, device.deviceId)).toBe(0);
    });
  });

  describe('over HTTP', () => {
    it('an attacker posting extreme values while 20 victims ingest: every victim request 200 with all records stored, the attacker 200 with its records rejected, no 500', async () => {
      const victims = await Promise.all(Array.from({ length: 20 }, () => registerDevice(t.api)));
      const attacker = await registerDevice(t.api);
      const slot = Math.floor((now - 25 * MINUTE) / 300_000) * 300_000;
      const at = (i: number) => iso(slot + i * 1000);
      const validAttackerRecord = { ts: at(200), metrics: { voltage: 51.2 } };
      const attacks: Array<() => Promise<{ response: Response; data?: unknown }>> = [
        () => ingest(t.api, attacker.accessToken, [{ ts: at(0), metrics: { voltage: 1.7e308 } }, { ts: at(1), metrics: { voltage: 1.7e308 } }]),
        () => ingest(t.api, attacker.accessToken, [{ ts: at(2), metrics: { voltage: 1e308 } }, { ts: at(3), metrics: { voltage: -1e308 } }, { ts: at(4), metrics: { voltage: -1.7976931348623157e308 } }]),
        () => ingest(t.api, attacker.accessToken, [{ ts: at(5), metrics: { voltage: 5e-324 } }, { ts: at(6), metrics: { soc: 1, current: -5e-324 } }, { ts: at(7), metrics: { voltage: 1e12 * (1 + 2 ** -52) } }]),
        () => ingestRaw(t.api, attacker.accessToken, `{"records":[{"ts":"${at(8)}","metrics":{"voltage":1e999}},{"ts":"${at(9)}","metrics":{"voltage":-1e999,"soc":50}}]}`),
        () => ingestRaw(t.api, attacker.accessToken, `{"records":[{"ts":"${at(10)}","metrics":{"voltage":1.7e308}},${JSON.stringify(validAttackerRecord)},{"ts":"${at(11)}","metrics":{"voltage":1.7e308}}]}`),
      ];
      const expectedRejections = [[0, 1], [0, 1, 2], [0, 1, 2], [0, 1], [0, 2]];
      const victimBatches = victims.map((_, v) => Array.from({ length: 3 }, (_, b) => Array.from({ length: 10 }, (_, i) => ({ ts: at(20 + b * 10 + i), metrics: { voltage: 48 + v, soc: i } }))));

      // Several rounds, so the attacker's requests land in flushes with many victims' requests.
      const attackerAnswers: Array<{ response: Response; data?: unknown }> = [];
      const victimAnswers: Array<Array<{ response: Response; data?: unknown }>> = victims.map(() => []);
      await Promise.all([
        (async () => {
          for (const attack of [...attacks, ...attacks]) attackerAnswers.push(await attack());
        })(),
        ...victims.map(async (victim, v) => {
          for (const batch of victimBatches[v]) victimAnswers[v].push(await ingest(t.api, victim.accessToken, batch));
        }),
      ]);

      for (const [v, victim] of victims.entries()) {
        expect(victimAnswers[v].map((answer) => [answer.response.status, answer.data])).toEqual(victimBatches[v].map(() => [200, { accepted: 10, duplicates: 0, rejected: [] }]));
        expect(await countRows(t.db, victim.deviceId)).toBe(30);
        expect(await rollupRows(t.db, victim.deviceId)).toEqual(expectedRollup(victimBatches[v].flat()));
      }
      const rejectedOf = (indexes: number[]) => indexes.map((index) => ({ index, code: 'VALUE_OUT_OF_RANGE' }));
      expect(attackerAnswers.map((answer) => answer.response.status)).toEqual(attackerAnswers.map(() => 200));
      expect(attackerAnswers.map((answer) => answer.data)).toEqual(
        [...expectedRejections, ...expectedRejections].map((indexes, i) => ({ accepted: i === 4 ? 1 : 0, duplicates: i === 9 ? 1 : 0, rejected: rejectedOf(indexes) })),
      );
      const stored = await telemetryRows(t.db, attacker.deviceId);
      expect(stored.map((row) => [row.ts.toISOString(), row.metrics])).toEqual([[validAttackerRecord.ts, validAttackerRecord.metrics]]);
    });

    it('values at the bounds, many in one slot: stored, summed at every rollup level, and every history read answers 200 with the right figures', async () => {
      const device = await registerDevice(t.api);
      const admin = await anAdmin(t);
      const dayStart = Math.floor((now - 2 * DAY) / DAY) * DAY;
      const slot = dayStart + 12 * HOUR;
      const LOW = 1e-12;
      const justAboveLow = -(LOW * (1 + 2 ** -52));
      // 1,000 records in one 5-minute slot, each with the largest and smallest magnitudes allowed;
      // `mixed` cancels out, `residue` leaves a sum far below LOW (about -1e-25) to be divided by
      // the count; `zero` is sent as -0 (the raw body below) and stored as 0.
      const records: TelemetryRecordBody[] = Array.from({ length: 1000 }, (_, i) => ({
        ts: iso(slot + i * 250),
        metrics: { top: 1e12, bottom: -1e12, low: LOW, negLow: -LOW, zero: 0, mixed: i % 2 === 0 ? 1e12 : -1e12, residue: i % 2 === 0 ? LOW : justAboveLow },
      }));

      for (const batch of [records.slice(0, 500), records.slice(500)]) {
        const { response, data } = await ingestRaw(t.api, device.accessToken, JSON.stringify({ records: batch }).replaceAll('"zero":0', '"zero":-0'));
        expect([response.status, data]).toEqual([200, { accepted: 500, duplicates: 0, rejected: [] }]);
      }
      const outside = [1e12 * (1 + 2 ** -52), -1e12 * (1 + 2 ** -52), LOW * (1 - 2 ** -52), -(LOW * (1 - 2 ** -52))];
      const { data: refused } = await ingest(t.api, device.accessToken, outside.map((value, i) => ({ ts: iso(slot + 290_000 + i), metrics: { top: value } })));
      expect(refused).toEqual({ accepted: 0, duplicates: 0, rejected: outside.map((_, index) => ({ index, code: 'VALUE_OUT_OF_RANGE' })) });

      const levels = await rollupRows(t.db, device.deviceId);
      expect(levels).toEqual(expectedRollup(records));
      const fiveMinutes = Object.fromEntries(levels['5m'].map((row) => [row.metric, row]));
      expect(fiveMinutes.top).toEqual(expect.objectContaining({ count: 1000, sum: 1e15, min: 1e12, max: 1e12 }));
      expect(fiveMinutes.bottom).toEqual(expect.objectContaining({ count: 1000, sum: -1e15 }));
      expect(fiveMinutes.zero).toEqual(expect.objectContaining({ count: 1000, sum: 0, min: 0, max: 0 }));
      expect((await latestRows(t.db, device.deviceId)).find((row) => row.metric === 'zero')!.value).toBe(0);

      const from = dayStart - DAY;
      const to = dayStart + 2 * DAY;
      for (const bucketSec of [86_400, 21_600, 3600, 300, 60]) {
        const { response, data } = await history(t.api, { authorization: `Bearer ${admin.accessToken}` }, device.deviceId, { from: iso(from), to: iso(to), bucket: String(bucketSec) });
        expect([bucketSec, response.status]).toEqual([bucketSec, 200]);
        expectSeries(data!.series, expectedSeries(records, { from, to, bucketSec }));
        const top = data!.series.find((series) => series.metric === 'top')!;
        expect(top.points.map((point) => [point.avg, point.min, point.max])).toEqual(top.points.map(() => [1e12, 1e12, 1e12]));
        expect(top.points.reduce((count, point) => count + point.count, 0)).toBe(1000);
        for (const point of data!.series.find((series) => series.metric === 'residue')!.points) {
          expect(point.avg).toBeLessThan(-1e-29);
          expect(point.avg).toBeGreaterThan(-1e-27);
        }
      }
      const raw = await history(t.api, { authorization: `Bearer ${admin.accessToken}` }, device.deviceId, { from: iso(from), to: iso(to), bucket: 'raw', limit: 1000 });
      expect(raw.response.status).toBe(200);
      expect(raw.data!.records).toHaveLength(1000);
      expect(raw.data!.records![0].metrics).toEqual(expect.objectContaining({ top: 1e12, bottom: -1e12, low: LOW, negLow: -LOW }));
    });
  });
});
