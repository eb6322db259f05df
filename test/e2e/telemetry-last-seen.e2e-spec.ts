import { TelemetryRecordStore } from '../../src/modules/telemetry/domain/telemetry-record.store.js';
import { registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { deviceRow } from '../support/database-state.js';
import { MINUTE, ingest, iso, telemetryRows } from '../support/telemetry.js';

/**
 * The ingest statement marks devices seen through the devices module's devices_seen(), in the same
 * statement as the records (for group commit). It follows the rule of every writer of that column:
 * it only moves forward, to the latest ingest time.
 */
describe('telemetry ingest: devices.last_seen_at only moves forward', () => {
  let t: TestApp;
  let writer: TelemetryRecordStore;
  const now = Date.now();

  beforeAll(async () => {
    t = await createTestApp();
    writer = t.app.get(TelemetryRecordStore);
  });
  afterAll(() => t.close());

  const lastSeen = async (deviceId: string) => (await deviceRow(t.db, deviceId))!.last_seen_at;
  const aRecord = (offsetMs: number) => ({ ts: new Date(now - 30 * MINUTE + offsetMs), batteryId: 'main', metrics: { voltage: 50 } });

  it('a flush carrying an earlier time than the one stored (it committed after a later flush) stores its records and leaves last_seen_at at the later time', async () => {
    const { deviceId } = await registerDevice(t.api);
    const later = new Date(now - 10_000);
    const earlier = new Date(now - 20_000);

    expect(await writer.write(deviceId, [aRecord(0)], later)).toEqual({ inserted: 1, conflicting: [] });
    expect(await lastSeen(deviceId)).toEqual(later);

    expect(await writer.write(deviceId, [aRecord(1000)], earlier)).toEqual({ inserted: 1, conflicting: [] });
    expect(await lastSeen(deviceId)).toEqual(later);
    expect(await telemetryRows(t.db, deviceId)).toHaveLength(2);

    const latest = new Date(now - 5000);
    expect(await writer.write(deviceId, [aRecord(2000)], latest)).toEqual({ inserted: 1, conflicting: [] });
    expect(await lastSeen(deviceId)).toEqual(latest);
  });

  it('a batch of duplicates only (a retry) still counts as seen, at its own time', async () => {
    const { deviceId } = await registerDevice(t.api);
    await writer.write(deviceId, [aRecord(0)], new Date(now - 10_000));

    expect(await writer.write(deviceId, [aRecord(0)], new Date(now - 1000))).toEqual({ inserted: 0, conflicting: [] });
    expect(await lastSeen(deviceId)).toEqual(new Date(now - 1000));
  });

  it('through the API: a stored last_seen_at ahead of the server clock (written by another path) is kept; one behind it moves to the request time', async () => {
    const device = await registerDevice(t.api);
    const ahead = new Date(Date.now() + 60_000);
    await t.db.query('UPDATE devices SET last_seen_at = $2 WHERE device_id = $1', [device.deviceId, ahead]);

    expect((await ingest(t.api, device.accessToken, [{ ts: iso(now - MINUTE), metrics: { soc: 50 } }])).data).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    expect(await lastSeen(device.deviceId)).toEqual(ahead);

    await t.db.query("UPDATE devices SET last_seen_at = now() - interval '1 hour' WHERE device_id = $1", [device.deviceId]);
    const before = Date.now();
    await ingest(t.api, device.accessToken, [{ ts: iso(now - 2 * MINUTE), metrics: { soc: 51 } }]);
    const seen = (await lastSeen(device.deviceId))!.getTime();
    expect(seen).toBeGreaterThanOrEqual(before);
    expect(seen).toBeLessThanOrEqual(Date.now());
  });

  it('a merged flush of several devices: each device’s last_seen_at moves forward only', async () => {
    const [a, b] = await Promise.all([registerDevice(t.api), registerDevice(t.api)]);
    const ahead = new Date(now + 60_000);
    await t.db.query('UPDATE devices SET last_seen_at = $2 WHERE device_id = $1', [a.deviceId, ahead]);
    const flushTime = new Date(now);

    // The first write runs alone; the second waits and goes out with the third in one statement.
    await Promise.all([writer.write(a.deviceId, [aRecord(0)], flushTime), writer.write(a.deviceId, [aRecord(1000)], flushTime), writer.write(b.deviceId, [aRecord(0)], flushTime)]);

    expect(await lastSeen(a.deviceId)).toEqual(ahead);
    expect(await lastSeen(b.deviceId)).toEqual(flushTime);
  });
});
