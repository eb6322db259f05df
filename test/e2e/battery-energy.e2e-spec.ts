import { SchedulerRegistry } from '@nestjs/schedule';
import { BatteryEnergy } from '../../src/modules/batteries/index.js';
import { INGEST_SQL } from '../../src/modules/telemetry/infrastructure/ingest.sql.js';
import { aRegisteredDevice } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { aSolarTrace, expectBuckets, referenceEnergy, shuffled } from '../support/battery-reference.js';
import { DAY, HOUR, MINUTE, ingestAll, iso, telemetryRows, type TelemetryRecordBody } from '../support/telemetry.js';

/**
 * Energy accounting kept in `battery_energy_1h` by the ingest statement's marks and
 * their recomputation, compared with figures computed here, independently, from the records as
 * stored: a trace of three days with charge by day and discharge by night, a gap of 40 minutes,
 * the same records sent in order and shuffled (late and out of order, repeats included), a record
 * landing between two stored ones, and a battery whose gateway counts its own Ah, with a reset.
 */

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
    // The schedule runs every 10 s.
    const deadline = Date.now() + 25_000;
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

  it('marks the hours a record can change: its own, the one before from its first 15 minutes, the one after from its last 15', async () => {
    const device = await aRegisteredDevice(t);
    const h = end - 30 * HOUR;
    const charge = { current: 10, voltage: 12 };
    const records: Array<[number, Record<string, number>]> = [
      [h + 15 * MINUTE - 1, charge], // h − 1 and h
      [h + 2 * HOUR + 15 * MINUTE, charge], // h + 2 alone
      [h + 4 * HOUR + 45 * MINUTE - 1, charge], // h + 4 alone
      [h + 6 * HOUR + 45 * MINUTE, charge], // h + 6 and h + 7
      [h + 10 * HOUR + 5 * MINUTE, { voltage: 12, soc: 50 }], // no charge: nothing
      [h + 12 * HOUR + 50 * MINUTE, { chargedAhTotal: 3 }], // h + 12 and h + 13
      [h + 20 * HOUR + MINUTE, charge], // with the next: h + 19, h + 20 and h + 21
      [h + 20 * HOUR + 59 * MINUTE, charge],
    ];
    // The statement itself in a transaction rolled back: the marks are seen before any recomputation can take them.
    const upload = await t.db.connect();
    try {
      await upload.query('BEGIN');
      await upload.query(INGEST_SQL, [
        records.map(() => device.body.deviceId),
        records.map(() => 'main'),
        records.map(([ts]) => new Date(ts)),
        records.map(([, metrics]) => JSON.stringify(metrics)),
        new Date(),
      ]);
      const marks = await upload.query<{ bucket: Date }>('SELECT bucket FROM battery_energy_stale WHERE device_id = $1 ORDER BY bucket', [device.body.deviceId]);
      expect(marks.rows.map((row) => (row.bucket.getTime() - h) / HOUR)).toEqual([-1, 0, 2, 4, 6, 7, 12, 13, 19, 20, 21]);
    } finally {
      await upload.query('ROLLBACK');
      upload.release();
    }
  });

  it('a read while an upload into its hours is not yet committed waits for it, and counts its records', async () => {
    const device = await aRegisteredDevice(t);
    const battery = { deviceId: device.body.deviceId, batteryId: 'main' };
    // Recent hours: the background leaves them to the reads, so only the read below takes the marks.
    const at = Date.now() - 30 * MINUTE;
    await ingestAll(t.api, device.registered.accessToken, [{ ts: iso(at), metrics: { current: 10, voltage: 12 } }]);
    const hour = Math.floor(at / HOUR) * HOUR;

    // The ingest statement itself, in a transaction left open: its records stored, their marks locked.
    const upload = await t.db.connect();
    try {
      await upload.query('BEGIN');
      await upload.query(INGEST_SQL, [[battery.deviceId], ['main'], [new Date(at + 10 * MINUTE)], [JSON.stringify({ current: 10, voltage: 12 })], new Date()]);
      let answered = false;
      const read = energy.buckets(battery, new Date(hour - HOUR), new Date(hour + 2 * HOUR), 3600).finally(() => (answered = true));
      // Blocked on the upload's lock, as PostgreSQL reports it.
      await eventually(async () => {
        const { rows } = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        expect(rows[0].n).toBeGreaterThan(0);
      });
      // Taking the mark waits for the upload: answered now, the hour would lack its record for good.
      expect(answered).toBe(false);
      await upload.query('COMMIT');

      const hours = await read;
      expect(hours.reduce((sum, bucket) => sum + bucket.chargedAh, 0)).toBeCloseTo(10 * (10 / 60), 12);
    } finally {
      upload.release();
    }
  });

  it('leaves an hour still filling to the reads, which recompute it', async () => {
    const device = await aRegisteredDevice(t);
    const battery = { deviceId: device.body.deviceId, batteryId: 'main' };
    const at = Date.now() - 6 * MINUTE;
    await ingestAll(t.api, device.registered.accessToken, [
      { ts: iso(at), metrics: { current: 10, voltage: 12 } },
      { ts: iso(at + 3 * MINUTE), metrics: { current: 10, voltage: 12 } },
    ]);
    const marked = async () => (await t.db.query('SELECT count(*)::int AS n FROM battery_energy_stale WHERE device_id = $1', [battery.deviceId])).rows[0].n;

    await energy.drain();
    // Records of the current time may still land in it: the background leaves it marked, not read again and again.
    expect(await marked()).toBeGreaterThan(0);
    expect((await t.db.query('SELECT count(*)::int AS n FROM battery_energy_1h WHERE device_id = $1', [battery.deviceId])).rows[0].n).toBe(0);

    const hours = await energy.buckets(battery, new Date(Math.floor(at / HOUR) * HOUR - HOUR), new Date(Math.ceil(Date.now() / HOUR) * HOUR + HOUR), 3600);
    expect(hours.reduce((sum, hour) => sum + hour.chargedAh, 0)).toBeCloseTo(10 * (3 / 60), 12);
    expect(await marked()).toBe(0);
  });
});

describe('battery energy with BATTERY_ANALYTICS_ENABLED=false (the benchmark compares both)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ BATTERY_ANALYTICS_ENABLED: 'false' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('stores the records as always, marks no hour and schedules no recomputation', async () => {
    const device = await aRegisteredDevice(t);
    const records = aSolarTrace(Math.floor(Date.now() / HOUR) * HOUR - HOUR).slice(0, 100);

    await ingestAll(t.api, device.registered.accessToken, records);

    expect(await telemetryRows(t.db, device.body.deviceId)).toHaveLength(100);
    expect((await t.db.query('SELECT count(*)::int AS n FROM battery_energy_stale')).rows[0].n).toBe(0);
    expect(t.app.get(SchedulerRegistry).getIntervals()).not.toContain('battery-energy');
  });
});
