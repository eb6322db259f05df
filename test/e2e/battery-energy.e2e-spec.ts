import { BatteryEnergy } from '../../src/modules/batteries/index.js';
import { aRegisteredDevice } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { DAY, HOUR, MINUTE, ingestAll, iso, telemetryRows, type TelemetryRecordBody, type TelemetryRow } from '../support/telemetry.js';

/**
 * Energy accounting (issue 22) kept in `battery_energy_1h` by the ingest statement's marks and
 * their recomputation, compared with figures computed here, independently, from the records as
 * stored: a trace of three days with charge by day and discharge by night, a gap of 40 minutes,
 * the same records sent in order and shuffled (late and out of order, repeats included), a record
 * landing between two stored ones, and a battery whose gateway counts its own Ah, with a reset.
 */

interface Totals {
  chargedAh: number;
  dischargedAh: number;
  chargedWh: number;
  dischargedWh: number;
  coveredMs: number;
}

const zero = (): Totals => ({ chargedAh: 0, dischargedAh: 0, chargedWh: 0, dischargedWh: 0, coveredMs: 0 });
const SEGMENT_MS = 15 * MINUTE;

/**
 * The reference: every segment of at most 15 minutes cut at each bucket edge and at each zero of
 * the current and of the power (straight lines between the records), each piece's trapezoid added
 * to charge or discharge by its sign. Counters, where both ends have them, spread their increase
 * (a decrease: a reset, the new count) evenly over the segment, Wh at the segment's mean voltage.
 */
function referenceEnergy(rows: TelemetryRow[], from: number, to: number, bucketMs: number): Map<number, Totals> {
  const buckets = new Map<number, Totals>();
  for (let start = from; start < to; start += bucketMs) buckets.set(start, zero());
  const points = rows
    .filter((row) => 'current' in row.metrics || 'chargedAhTotal' in row.metrics)
    .map((row): { ts: number } & Partial<Record<'current' | 'voltage' | 'chargedAhTotal' | 'dischargedAhTotal', number>> => ({ ts: row.ts.getTime(), ...row.metrics }))
    .sort((a, b) => a.ts - b.ts);
  for (let i = 1; i < points.length; i += 1) {
    const a = points[i - 1];
    const b = points[i];
    const span = b.ts - a.ts;
    if (span > SEGMENT_MS) continue;
    const line = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined ? undefined : (t: number) => x + ((y - x) * (t - a.ts)) / span);
    const current = line(a.current, b.current);
    const counters = a.chargedAhTotal !== undefined && b.chargedAhTotal !== undefined;
    const power = a.voltage !== undefined && b.voltage !== undefined && current && !counters ? line(a.voltage * a.current!, b.voltage * b.current!) : undefined;
    const breaks = new Set([a.ts, b.ts]);
    for (let edge = Math.ceil(a.ts / bucketMs) * bucketMs; edge < b.ts; edge += bucketMs) breaks.add(edge);
    for (const [x, y] of [
      [a.current, b.current],
      [power?.(a.ts), power?.(b.ts)],
    ]) {
      if (x !== undefined && y !== undefined && x * y < 0) breaks.add(a.ts + (span * x) / (x - y));
    }
    const cuts = [...breaks].filter((t) => t >= from && t <= to).sort((p, q) => p - q);
    for (let k = 1; k < cuts.length; k += 1) {
      const [p, q] = [cuts[k - 1], cuts[k]];
      const bucket = buckets.get(Math.floor(p / bucketMs) * bucketMs);
      if (!bucket) continue;
      const hours = (q - p) / HOUR;
      if (counters) {
        const increase = (x: number, y: number) => (y >= x ? y - x : y);
        bucket.chargedAh += (increase(a.chargedAhTotal!, b.chargedAhTotal!) * (q - p)) / span;
        bucket.dischargedAh += (increase(a.dischargedAhTotal!, b.dischargedAhTotal!) * (q - p)) / span;
      } else {
        const ah = ((current!(p) + current!(q)) / 2) * hours;
        if (ah >= 0) bucket.chargedAh += ah;
        else bucket.dischargedAh -= ah;
      }
      if (power) {
        const wh = ((power(p) + power(q)) / 2) * hours;
        if (wh >= 0) bucket.chargedWh += wh;
        else bucket.dischargedWh -= wh;
      } else if (counters && a.voltage !== undefined && b.voltage !== undefined) {
        const increase = (x: number, y: number) => (y >= x ? y - x : y);
        const meanVoltage = (a.voltage + b.voltage) / 2;
        bucket.chargedWh += ((increase(a.chargedAhTotal!, b.chargedAhTotal!) * (q - p)) / span) * meanVoltage;
        bucket.dischargedWh += ((increase(a.dischargedAhTotal!, b.dischargedAhTotal!) * (q - p)) / span) * meanVoltage;
      }
      bucket.coveredMs += q - p;
    }
  }
  return buckets;
}

/** Compares the service's buckets (absent: no data) with the reference's, to 1e-9 relative. */
function expectBuckets(actual: Array<Totals & { start: number }>, expected: Map<number, Totals>): void {
  const byStart = new Map(actual.map((bucket) => [bucket.start, bucket]));
  for (const start of byStart.keys()) expect(expected.has(start)).toBe(true);
  for (const [start, want] of expected) {
    const got = byStart.get(start) ?? { start, ...zero() };
    for (const key of ['chargedAh', 'dischargedAh', 'chargedWh', 'dischargedWh', 'coveredMs'] as const) {
      expect({ start: iso(start), key, value: got[key] }).toEqual({ start: iso(start), key, value: expect.closeTo(want[key], Math.max(0, 9 - Math.ceil(Math.log10(Math.abs(want[key]) + 1)))) });
    }
  }
}

/** Three days every 2 minutes, ending an hour ago: solar charge by day, a load by night, a 40-minute gap on day 2. */
function aSolarTrace(end: number): TelemetryRecordBody[] {
  const records: TelemetryRecordBody[] = [];
  const start = end - 3 * DAY;
  for (let ts = start; ts < end; ts += 2 * MINUTE) {
    if (ts > start + DAY + 5 * HOUR && ts < start + DAY + 5 * HOUR + 40 * MINUTE) continue;
    const hour = new Date(ts).getUTCHours() + new Date(ts).getUTCMinutes() / 60;
    const sun = Math.max(0, Math.sin((Math.PI * (hour - 6)) / 12));
    const current = Math.round((sun * 30 - 6 + 2 * Math.sin(ts / 7e5)) * 1000) / 1000;
    const voltage = Math.round((13 + current * 0.02 + 0.3 * Math.sin(ts / 3e6)) * 1000) / 1000;
    records.push({ ts: iso(ts), metrics: { current, voltage, soc: 50 + 40 * sun } });
  }
  return records;
}

/** The same records shuffled (seeded), with some sent twice. */
function shuffled(records: TelemetryRecordBody[]): TelemetryRecordBody[] {
  let seed = 42;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const copy = [...records, ...records.filter((_, i) => i % 97 === 0)];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

describe('battery energy accounting', () => {
  let t: TestApp;
  let energy: BatteryEnergy;
  const end = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
  const from = end - 3 * DAY - DAY;
  const to = end + HOUR;
  const trace = aSolarTrace(end);

  beforeAll(async () => {
    t = await createTestApp();
    energy = t.app.get(BatteryEnergy);
  });
  afterAll(async () => {
    await t?.close();
  });

  const rowsOf = async (deviceId: string, batteryId = 'main') => (await telemetryRows(t.db, deviceId)).filter((row) => row.battery_id === batteryId);

  it('per hour and per day, equal to the figures computed from the stored records, gap included', async () => {
    const device = await aRegisteredDevice(t);
    await ingestAll(t.api, device.registered.accessToken, trace);
    const rows = await rowsOf(device.body.deviceId);
    expect(rows).toHaveLength(trace.length);

    expectBuckets(await energy.buckets({ deviceId: device.body.deviceId, batteryId: 'main' }, new Date(from), new Date(to), 3600), referenceEnergy(rows, from, to, HOUR));
    const days = { from: Math.floor(from / DAY) * DAY, to: Math.ceil(to / DAY) * DAY };
    expectBuckets(await energy.buckets({ deviceId: device.body.deviceId, batteryId: 'main' }, new Date(days.from), new Date(days.to), 86_400), referenceEnergy(rows, days.from, days.to, DAY));
    // The 40-minute gap: the hour it lies in is covered only by the segments either side of it.
    const gapHour = Math.floor((end - 3 * DAY + DAY + 5 * HOUR) / HOUR) * HOUR;
    const hours = await energy.buckets({ deviceId: device.body.deviceId, batteryId: 'main' }, new Date(from), new Date(to), 3600);
    expect(hours.find((hour) => hour.start === gapHour)!.coveredMs).toBeLessThan(HOUR - 40 * MINUTE + 2 * MINUTE);
  });

  it('late, out-of-order and repeated batches give the same figures as in-order ones', async () => {
    const inOrder = await aRegisteredDevice(t);
    const outOfOrder = await aRegisteredDevice(t);
    await ingestAll(t.api, inOrder.registered.accessToken, trace);
    const mixed = shuffled(trace);
    // Batches of uneven size, so hours are recomputed between them as well.
    for (let start = 0, size = 7; start < mixed.length; start += size, size = (size * 3) % 401 + 1) {
      const { response } = await t.api.POST('/api/v1/telemetry', { body: { records: mixed.slice(start, start + size) as never }, headers: { authorization: `Bearer ${outOfOrder.registered.accessToken}` } });
      expect(response.status).toBe(200);
      if (start % 5 === 0) await energy.drain();
    }
    const battery = (deviceId: string) => ({ deviceId, batteryId: 'main' });

    const expected = await energy.buckets(battery(inOrder.body.deviceId), new Date(from), new Date(to), 3600);
    const actual = await energy.buckets(battery(outOfOrder.body.deviceId), new Date(from), new Date(to), 3600);

    expect(actual.map((bucket) => bucket.start)).toEqual(expected.map((bucket) => bucket.start));
    expectBuckets(actual, new Map(expected.map(({ start, ...totals }) => [start, totals])));
    expectBuckets(actual, referenceEnergy(await rowsOf(outOfOrder.body.deviceId), from, to, HOUR));
  });

  it('a record landing between two stored ones replaces their segment by two, in the stored hour', async () => {
    const device = await aRegisteredDevice(t);
    const at = end - 10 * HOUR;
    await ingestAll(t.api, device.registered.accessToken, [
      { ts: iso(at), metrics: { current: 10, voltage: 12 } },
      { ts: iso(at + 10 * MINUTE), metrics: { current: 10, voltage: 12 } },
    ]);
    const battery = { deviceId: device.body.deviceId, batteryId: 'main' };
    const [before] = await energy.buckets(battery, new Date(at), new Date(at + HOUR), 3600);
    expect(before.chargedAh).toBeCloseTo(10 / 6, 12);
    await energy.drain();

    await ingestAll(t.api, device.registered.accessToken, [{ ts: iso(at + 5 * MINUTE), metrics: { current: -10, voltage: 12 } }]);
    expect((await t.db.query('SELECT count(*)::int AS n FROM battery_energy_stale WHERE device_id = $1', [battery.deviceId])).rows[0].n).toBeGreaterThan(0);
    const [after] = await energy.buckets(battery, new Date(at), new Date(at + HOUR), 3600);

    // +10 → -10 → +10: each 5-minute segment half charge, half discharge at 5 A average.
    expect(after.chargedAh).toBeCloseTo(2 * 5 * (2.5 / 60), 12);
    expect(after.dischargedAh).toBeCloseTo(2 * 5 * (2.5 / 60), 12);
    // The hour read was recomputed before it was read (the hour before, which 15 minutes back reaches, is left to the background).
    const marks = await t.db.query<{ bucket: Date }>('SELECT bucket FROM battery_energy_stale WHERE device_id = $1 ORDER BY bucket', [battery.deviceId]);
    expect(marks.rows.map((row) => iso(row.bucket.getTime())).filter((bucket) => bucket !== iso(at - HOUR))).toEqual([]);
  });

  it("takes the gateway's own counters over the current, with a reset", async () => {
    const device = await aRegisteredDevice(t);
    const at = end - 20 * HOUR;
    const counted: TelemetryRecordBody[] = [];
    let charged = 1_000;
    let discharged = 800;
    for (let k = 0; k < 60; k += 1) {
      // The gateway restarts after 40 records: its counters start again from 0.
      if (k === 40) [charged, discharged] = [0.2, 0.1];
      counted.push({ ts: iso(at + k * 5 * MINUTE), batteryId: 'pack2', metrics: { chargedAhTotal: charged, dischargedAhTotal: discharged, voltage: 12.5 + (k % 7) * 0.1, current: 99 } });
      charged += k % 3 === 0 ? 0.4 : 0.05;
      discharged += k % 4 === 0 ? 0.3 : 0.02;
    }
    await ingestAll(t.api, device.registered.accessToken, counted);
    const rows = await rowsOf(device.body.deviceId, 'pack2');

    const hours = await energy.buckets({ deviceId: device.body.deviceId, batteryId: 'pack2' }, new Date(from), new Date(to), 3600);

    expectBuckets(hours, referenceEnergy(rows, from, to, HOUR));
    // Not the current's 99 A: about 2 Ah an hour at most.
    expect(Math.max(...hours.map((hour) => hour.chargedAh))).toBeLessThan(3);
  });

  it('the background recomputation empties the marks by itself', async () => {
    const device = await aRegisteredDevice(t);
    await ingestAll(t.api, device.registered.accessToken, trace.slice(0, 200));
    expect((await t.db.query('SELECT count(*)::int AS n FROM battery_energy_stale WHERE device_id = $1', [device.body.deviceId])).rows[0].n).toBeGreaterThan(0);
    const deadline = Date.now() + 15_000;
    let left = 1;
    while (left > 0 && Date.now() < deadline) {
      await new Promise((resume) => setTimeout(resume, 250));
      left = (await t.db.query('SELECT count(*)::int AS n FROM battery_energy_stale WHERE device_id = $1', [device.body.deviceId])).rows[0].n;
    }
    expect(left).toBe(0);
    const stored = await t.db.query<{ bucket: Date; charged_ah: number; discharged_ah: number; charged_wh: number; discharged_wh: number; covered_ms: number }>(
      'SELECT bucket, charged_ah, discharged_ah, charged_wh, discharged_wh, covered_ms FROM battery_energy_1h WHERE device_id = $1 ORDER BY bucket',
      [device.body.deviceId],
    );
    expectBuckets(
      stored.rows.map((row) => ({ start: row.bucket.getTime(), chargedAh: row.charged_ah, dischargedAh: row.discharged_ah, chargedWh: row.charged_wh, dischargedWh: row.discharged_wh, coveredMs: row.covered_ms })),
      new Map([...referenceEnergy(await rowsOf(device.body.deviceId), from, to, HOUR)].filter(([, totals]) => totals.coveredMs > 0)),
    );
  });
});
