import type { components } from '@device-cloud/client';
import { aSolarTrace, expectBuckets, referenceEnergy, referenceHealth } from '../support/battery-reference.js';
import { aClaimedDevice, aCustomer, ADMIN_SETTINGS, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';
import { DAY, HOUR, MINUTE, ingestAll, iso, telemetryRows } from '../support/telemetry.js';

type ProfileBody = components['schemas']['BatteryProfileRequest'];

/**
 * Battery intelligence through the generated client: profiles by role, the battery list
 * with time to empty, energy per bucket and the health figures compared with figures computed here
 * from the stored records, and the administrators' outliers on a planted fleet.
 */
describe('batteries through the API', () => {
  let t: TestApp;
  let owner: SignedIn;
  let viewer: SignedIn;
  let installer: SignedIn;
  let stranger: SignedIn;
  let admin: SignedIn;
  const PROFILE: ProfileBody = { name: 'Garage bank', chemistry: 'lfp', nominalVoltage: 12.8, capacityAh: 100 };

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    [owner, viewer, installer, stranger] = await Promise.all([aCustomer(t), aCustomer(t), aCustomer(t), aCustomer(t)]);
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  const putProfile = (who: SignedIn, deviceId: string, batteryId: string, body: ProfileBody) =>
    t.api.PUT('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}', { params: { path: { deviceId, batteryId } }, body, headers: who.headers });
  const list = (who: SignedIn, deviceId: string) => t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries', { params: { path: { deviceId } }, headers: who.headers });
  const energy = (who: SignedIn, deviceId: string, batteryId: string, query: { from?: string; to?: string; bucket?: '1h' | '1d' | '7d' | '30d' }) =>
    t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/energy', { params: { path: { deviceId, batteryId }, query }, headers: who.headers });
  const health = (who: SignedIn, deviceId: string, batteryId: string, query: { from?: string; to?: string }) =>
    t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/health', { params: { path: { deviceId, batteryId }, query }, headers: who.headers });
  const shareWith = async (deviceId: string, who: SignedIn, role: 'viewer' | 'installer') => {
    const { response } = await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId } }, body: { email: who.email, role }, headers: owner.headers });
    expect(response.status).toBe(201);
  };
  const profileRow = async (deviceId: string) => (await t.db.query('SELECT name, chemistry, nominal_voltage, capacity_ah FROM battery_profiles WHERE device_id = $1', [deviceId])).rows;

  describe('profiles', () => {
    it('the owner and an installer set them, a viewer gets 403 SHARE_ROLE, anyone else 404; the list shows them', async () => {
      const gateway = await aClaimedDevice(t, owner);
      const deviceId = gateway.body.deviceId;
      await shareWith(deviceId, viewer, 'viewer');
      await shareWith(deviceId, installer, 'installer');

      const put = await putProfile(owner, deviceId, 'main', PROFILE);
      expect(put.response.status).toBe(200);
      expect(put.data).toEqual({ ...PROFILE, updatedAt: expect.any(String) });
      expect((await putProfile(installer, deviceId, 'aux', { ...PROFILE, name: 'Aux', chemistry: 'agm', capacityAh: 60 })).response.status).toBe(200);
      expectProblem(await putProfile(viewer, deviceId, 'main', { ...PROFILE, name: 'Mine now' }), 403, 'SHARE_ROLE');
      expectProblem(await putProfile(stranger, deviceId, 'main', { ...PROFILE, name: 'Mine now' }), 404, 'NOT_FOUND');
      expect(await profileRow(deviceId)).toEqual(
        expect.arrayContaining([
          { name: 'Garage bank', chemistry: 'lfp', nominal_voltage: 12.8, capacity_ah: 100 },
          { name: 'Aux', chemistry: 'agm', nominal_voltage: 12.8, capacity_ah: 60 },
        ]),
      );

      const listed = await list(viewer, deviceId);
      expect(listed.response.status).toBe(200);
      expect(listed.data!.items.map((item) => [item.batteryId, item.profile?.name])).toEqual([
        ['aux', 'Aux'],
        ['main', 'Garage bank'],
      ]);
      expectProblem(await list(stranger, deviceId), 404, 'NOT_FOUND');
    });

    it('refuses bad input with 400 naming the field, and stores nothing', async () => {
      const gateway = await aClaimedDevice(t, owner);
      const deviceId = gateway.body.deviceId;
      const bad: Array<[string, unknown]> = [
        ['chemistry', { ...PROFILE, chemistry: 'lithium' }],
        ['capacityAh', { ...PROFILE, capacityAh: 0 }],
        ['nominalVoltage', { ...PROFILE, nominalVoltage: 'twelve' }],
        ['name', { ...PROFILE, name: '   ' }],
      ];
      for (const [field, body] of bad) {
        const answer = await putProfile(owner, deviceId, 'main', body as ProfileBody);
        expectProblem(answer, 400, 'VALIDATION_FAILED');
        expect(JSON.stringify(answer.error)).toContain(field);
      }
      expectProblem(await putProfile(owner, deviceId, 'bad battery!', PROFILE), 400, 'VALIDATION_FAILED');
      expect(await profileRow(deviceId)).toEqual([]);
    });
  });

  describe('energy and health', () => {
    const end = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
    let deviceId: string;

    beforeAll(async () => {
      const gateway = await aClaimedDevice(t, owner);
      deviceId = gateway.body.deviceId;
      await shareWith(deviceId, viewer, 'viewer');
      const trace = aSolarTrace(end).map((record, k) => ({
        ...record,
        // SoC from 15 % at night to 95 % at noon: time below 20 % and above 90 % both happen.
        metrics: { ...record.metrics, soc: 15 + 2 * (record.metrics.soc - 50), temperature: 30 + 20 * Math.sin(k / 40), cellVoltageMin: 3.3, cellVoltageMax: 3.3 + (k % 50) / 1000 },
      }));
      await ingestAll(t.api, gateway.registered.accessToken, trace);
      expect((await putProfile(owner, deviceId, 'main', PROFILE)).response.status).toBe(200);
    });

    it('answers every bucket with the figures computed from the stored records, and cycles against the profile’s capacity', async () => {
      const rows = await telemetryRows(t.db, deviceId);
      const from = Math.floor((end - 3 * DAY) / DAY) * DAY;
      const to = Math.ceil(end / DAY) * DAY + DAY;
      for (const [bucket, widthMs] of [
        ['1h', HOUR],
        ['1d', DAY],
      ] as const) {
        const { data, response } = await energy(viewer, deviceId, 'main', { from: iso(from), to: iso(to), bucket });
        expect(response.status).toBe(200);
        expect(data!.bucketSeconds).toBe(widthMs / 1000);
        expect(data!.points).toHaveLength((to - from) / widthMs);
        const expected = referenceEnergy(rows, from, to, widthMs);
        expectBuckets(
          data!.points.map((point) => ({ start: Date.parse(point.ts), chargedAh: point.chargedAh, dischargedAh: point.dischargedAh, chargedWh: point.chargedWh, dischargedWh: point.dischargedWh, coveredMs: point.coverage * widthMs })),
          expected,
        );
        for (const point of data!.points) {
          expect(point.equivalentFullCycles).toBeCloseTo(point.dischargedAh / PROFILE.capacityAh, 12);
          expect(point.coverage).toBeGreaterThanOrEqual(0);
          expect(point.coverage).toBeLessThanOrEqual(1);
        }
      }
    });

    it('health: the DoD histogram, time beyond thresholds and extremes equal the figures computed from the records', async () => {
      const from = end - 3 * DAY;
      const rows = (await telemetryRows(t.db, deviceId)).filter((row) => row.ts.getTime() >= from && row.ts.getTime() < end);
      const { data, response } = await health(viewer, deviceId, 'main', { from: iso(from), to: iso(end) });

      expect(response.status).toBe(200);
      const expected = referenceHealth(rows);
      expect(data!.depthOfDischargeHistogram).toEqual(expected.depthOfDischargeHistogram);
      expect(data!.depthOfDischargeHistogram.reduce((a, b) => a + b)).toBeGreaterThanOrEqual(2);
      expect(data!.timeAboveSoc90Sec).toBeCloseTo(expected.timeAboveSoc90Sec, 6);
      expect(data!.timeBelowSoc20Sec).toBeCloseTo(expected.timeBelowSoc20Sec, 6);
      expect(data!.timeAboveTemperature45Sec).toBeCloseTo(expected.timeAboveTemperature45Sec, 6);
      expect(Math.min(data!.timeAboveSoc90Sec, data!.timeBelowSoc20Sec, data!.timeAboveTemperature45Sec)).toBeGreaterThan(0);
      expect(data!.minSoc).toBe(expected.minSoc);
      expect(data!.maxTemperature).toBe(expected.maxTemperature);
      expect(data!.maxCellImbalanceV).toBeCloseTo(expected.maxCellImbalanceV!, 12);
      const hours = referenceEnergy(await telemetryRows(t.db, deviceId), Math.floor(from / HOUR) * HOUR, Math.ceil(end / HOUR) * HOUR, HOUR);
      const dischargedAh = [...hours.values()].reduce((sum, hour) => sum + hour.dischargedAh, 0);
      expect(data!.equivalentFullCycles).toBeCloseTo(dischargedAh / PROFILE.capacityAh, 9);
    });

    it('refuses a bad range or bucket with 400, a device it cannot see with 404', async () => {
      expectProblem(await energy(owner, deviceId, 'main', { bucket: '2h' as never }), 400, 'VALIDATION_FAILED');
      expectProblem(await energy(owner, deviceId, 'main', { from: iso(end), to: iso(end - DAY) }), 400, 'VALIDATION_FAILED');
      expectProblem(await energy(owner, deviceId, 'main', { from: 'yesterday' }), 400, 'VALIDATION_FAILED');
      expectProblem(await health(owner, deviceId, 'main', { from: iso(end - 100 * DAY), to: iso(end) }), 400, 'VALIDATION_FAILED');
      expectProblem(await energy(stranger, deviceId, 'main', {}), 404, 'NOT_FOUND');
      expectProblem(await health(stranger, deviceId, 'main', {}), 404, 'NOT_FOUND');
    });
  });

  describe('time to empty or full', () => {
    it('from the capacity, the newest SoC and the average current of the last 15 minutes; absent without a profile or while idle', async () => {
      const gateway = await aClaimedDevice(t, owner);
      const deviceId = gateway.body.deviceId;
      const now = Date.now() - MINUTE;
      // Discharging: -8 A then -12 A over the last 15 minutes (average -10 A), SoC 50 %.
      const records = [0, 5, 10, 15].map((minutesAgo) => ({ ts: iso(now - minutesAgo * MINUTE), metrics: { current: minutesAgo >= 10 ? -8 : -12, soc: 50 } }));
      // Charging at 20 A on a second battery at 75 %; idle on a third.
      records.push(...[0, 5, 10].map((minutesAgo) => ({ ts: iso(now - minutesAgo * MINUTE), batteryId: 'solar', metrics: { current: 20, soc: 75 } })));
      records.push(...[0, 5].map((minutesAgo) => ({ ts: iso(now - minutesAgo * MINUTE), batteryId: 'idle', metrics: { current: 0.01, soc: 90 } })));
      await ingestAll(t.api, gateway.registered.accessToken, records);
      const before = await list(owner, deviceId);
      expect(before.data!.items.every((item) => item.timeToEmptySec === undefined && item.timeToFullSec === undefined)).toBe(true);

      for (const batteryId of ['main', 'solar', 'idle']) expect((await putProfile(owner, deviceId, batteryId, PROFILE)).response.status).toBe(200);
      const { data } = await list(owner, deviceId);
      const byId = Object.fromEntries(data!.items.map((item) => [item.batteryId, item]));

      // Trapezoids over 15 minutes: (-8-8)/2·5 + (-8-12)/2·5 + (-12-12)/2·5 = -40 - 50 - 60 → -10 A average.
      expect(byId.main.timeToEmptySec).toBe(Math.round(((0.5 * 100) / 10) * 3600));
      expect(byId.main.timeToFullSec).toBeUndefined();
      expect(byId.solar.timeToFullSec).toBe(Math.round(((0.25 * 100) / 20) * 3600));
      expect(byId.idle.timeToEmptySec).toBeUndefined();
      expect(byId.idle.timeToFullSec).toBeUndefined();
      expect(byId.main.latest.soc).toEqual({ value: 50, ts: iso(now) });
    });
  });

  describe('fleet outliers (administrators)', () => {
    const outliers = (who: SignedIn, query: { metric: 'cellImbalance' | 'sohDecline' | 'selfDischarge'; limit?: number; cursor?: string }) =>
      t.api.GET('/api/v1/admin/batteries/outliers', { params: { query }, headers: who.headers });

    it('ranks each battery against the median of its chemistry and capacity, the planted one first', async () => {
      const now = Date.now() - MINUTE;
      const imbalances = [0.02, 0.021, 0.022, 0.023, 0.024, 0.025, 0.026, 0.25];
      const planted: string[] = [];
      for (const [k, imbalance] of imbalances.entries()) {
        const gateway = await aClaimedDevice(t, owner);
        await ingestAll(t.api, gateway.registered.accessToken, [{ ts: iso(now), metrics: { cellVoltageMin: 3.3, cellVoltageMax: 3.3 + imbalance } }]);
        expect((await putProfile(owner, gateway.body.deviceId, 'main', { ...PROFILE, name: `Bank ${k}`, capacityAh: 1000 })).response.status).toBe(200);
        planted.push(gateway.body.deviceId);
      }
      // Another group, whose own median is far higher: none of it is an outlier of the first.
      for (const imbalance of [0.1, 0.11, 0.12]) {
        const gateway = await aClaimedDevice(t, owner);
        await ingestAll(t.api, gateway.registered.accessToken, [{ ts: iso(now), metrics: { cellVoltageMin: 3.6, cellVoltageMax: 3.6 + imbalance } }]);
        expect((await putProfile(owner, gateway.body.deviceId, 'main', { ...PROFILE, chemistry: 'nmc', capacityAh: 1000 })).response.status).toBe(200);
      }

      const { data, response } = await outliers(admin, { metric: 'cellImbalance', limit: 100 });

      expect(response.status).toBe(200);
      const ours = data!.items.filter((item) => item.capacityAh === 1000);
      expect(ours[0]).toMatchObject({ deviceId: planted[7], batteryId: 'main', chemistry: 'lfp', groupSize: 8 });
      expect(ours[0].value).toBeCloseTo(0.25, 9);
      // The median of eight: half-way between the 4th and 5th.
      expect(ours[0].fleetMedian).toBeCloseTo((0.023 + 0.024) / 2, 9);
      expect(ours[0].deviation).toBeCloseTo(0.25 - (0.023 + 0.024) / 2, 9);
      const nmc = ours.filter((item) => item.chemistry === 'nmc');
      expect(nmc.map((item) => item.fleetMedian)).toEqual([0.11, 0.11, 0.11].map((value) => expect.closeTo(value, 9)));
      const deviations = data!.items.map((item) => item.deviation);
      expect(deviations).toEqual([...deviations].sort((a, b) => b - a));
    });

    it('sohDecline: soh points lost per 30 days, the planted battery first', async () => {
      const dayStart = Math.floor(Date.now() / DAY) * DAY;
      const declines = [0.01, 0.012, 0.014, 0.016, 0.5];
      const ids: string[] = [];
      for (const [k, perDay] of declines.entries()) {
        const gateway = await aClaimedDevice(t, owner);
        // One soh a day at noon for the 10 days before today.
        const records = Array.from({ length: 10 }, (_, i) => ({ ts: iso(dayStart - (10 - i) * DAY + 12 * HOUR), metrics: { soh: 99 - perDay * i } }));
        await ingestAll(t.api, gateway.registered.accessToken, records);
        expect((await putProfile(owner, gateway.body.deviceId, 'main', { ...PROFILE, name: `Soh ${k}`, chemistry: 'gel', capacityAh: 777 })).response.status).toBe(200);
        ids.push(gateway.body.deviceId);
      }
      const stored = async (deviceId: string) => (await telemetryRows(t.db, deviceId)).map((row) => ({ ts: row.ts.getTime(), soh: row.metrics.soh })).sort((a, b) => a.ts - b.ts);
      const expected = new Map<string, number>();
      for (const deviceId of ids) {
        const rows = (await stored(deviceId)).filter((row) => row.ts >= Date.now() - 30 * DAY);
        const [first, last] = [rows[0], rows[rows.length - 1]];
        const days = (Math.floor(last.ts / DAY) - Math.floor(first.ts / DAY));
        expected.set(deviceId, ((first.soh - last.soh) / days) * 30);
      }

      const { data } = await outliers(admin, { metric: 'sohDecline', limit: 100 });

      const ours = data!.items.filter((item) => item.capacityAh === 777);
      expect(ours.map((item) => item.deviceId)[0]).toBe(ids[4]);
      expect(ours).toHaveLength(5);
      for (const item of ours) expect(item.value).toBeCloseTo(expected.get(item.deviceId)!, 9);
      const middle = [...expected.values()].sort((a, b) => a - b)[2];
      expect(ours.every((item) => Math.abs(item.fleetMedian - middle) < 1e-9)).toBe(true);
    });

    it('selfDischarge: SoC points lost per day between idle hours, the planted battery first', async () => {
      const start = Math.floor(Date.now() / HOUR) * HOUR - 24 * HOUR;
      const dropsPerHour = [0.01, 0.012, 0.015, 0.3];
      const ids: string[] = [];
      for (const [k, perHour] of dropsPerHour.entries()) {
        const gateway = await aClaimedDevice(t, owner);
        // Idle (0.05 A on a 200 Ah battery: below capacity ÷ 1000) for 12 hours, a record every 20 minutes; then 10 A for 3 hours, not idle.
        const records = Array.from({ length: 36 }, (_, i) => ({ ts: iso(start + i * 20 * MINUTE + MINUTE), metrics: { current: 0.05, soc: 80 - perHour * (i / 3) } }));
        records.push(...Array.from({ length: 9 }, (_, i) => ({ ts: iso(start + 12 * HOUR + i * 20 * MINUTE + MINUTE), metrics: { current: -10, soc: 70 - i } })));
        await ingestAll(t.api, gateway.registered.accessToken, records);
        expect((await putProfile(owner, gateway.body.deviceId, 'main', { ...PROFILE, name: `Idle ${k}`, chemistry: 'agm', capacityAh: 200 })).response.status).toBe(200);
        ids.push(gateway.body.deviceId);
      }
      // Computed here: hourly means of soc over the hours whose current stayed within ±0.2 A, consecutive pairs.
      const expectedOf = async (deviceId: string) => {
        const hours = new Map<number, { socs: number[]; idle: boolean }>();
        for (const row of await telemetryRows(t.db, deviceId)) {
          const hour = Math.floor(row.ts.getTime() / HOUR) * HOUR;
          const entry = hours.get(hour) ?? { socs: [], idle: true };
          entry.socs.push(row.metrics.soc);
          if (Math.abs(row.metrics.current) > 200 * 0.001) entry.idle = false;
          hours.set(hour, entry);
        }
        const mean = (values: number[]) => values.reduce((a, b) => a + b) / values.length;
        const drops: number[] = [];
        for (const [hour, entry] of hours) {
          const next = hours.get(hour + HOUR);
          if (entry.idle && next?.idle) drops.push(mean(entry.socs) - mean(next.socs));
        }
        return (drops.reduce((a, b) => a + b) / drops.length) * 24;
      };

      const { data } = await outliers(admin, { metric: 'selfDischarge', limit: 100 });

      const ours = data!.items.filter((item) => item.capacityAh === 200);
      expect(ours).toHaveLength(4);
      expect(ours[0].deviceId).toBe(ids[3]);
      for (const item of ours) expect(item.value).toBeCloseTo(await expectedOf(item.deviceId), 9);
      expect(ours[0].value).toBeCloseTo(0.3 * 24, 6);
    });

    it('pages with limit and cursor, and is for administrators only', async () => {
      const first = await outliers(admin, { metric: 'cellImbalance', limit: 2 });
      expect(first.data!.items).toHaveLength(2);
      expect(first.data!.nextCursor).toEqual(expect.any(String));
      const second = await outliers(admin, { metric: 'cellImbalance', limit: 2, cursor: first.data!.nextCursor! });
      expect(second.data!.items[0].deviation).toBeLessThanOrEqual(first.data!.items[1].deviation);
      expectProblem(await outliers(admin, { metric: 'cellImbalance', cursor: 'nonsense' }), 400, 'VALIDATION_FAILED');
      expectProblem(await outliers(admin, { metric: 'voltage' as never }), 400, 'VALIDATION_FAILED');
      expectProblem(await outliers(owner, { metric: 'cellImbalance' }), 403, 'FORBIDDEN');
    });
  });
});
