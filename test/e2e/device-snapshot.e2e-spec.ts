import pg from 'pg';
import { DeviceSnapshotQueries, type DeviceSnapshot } from '../../src/modules/devices/domain/device-snapshot.queries.js';
import { ANNOUNCED_DEVICE_COLUMNS, IMMUTABLE_DEVICE_COLUMNS } from '../../src/modules/devices/infrastructure/sql-device-snapshot.queries.js';
import { CHANGE_CHANNEL } from '../../src/shared/database/change-feed.js';
import { registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { signUp } from '../support/customers.js';

/**
 * Device snapshots are cached until the change feed announces a change of the device. A snapshot
 * that held a column the trigger does not watch could be served stale for ever, so the two must
 * match: every column of `devices` (read from the catalogue, so a new column is covered at once)
 * is changed on its own, and the snapshot must change exactly when a notification comes.
 */
describe('device snapshot and change feed hold the same columns', () => {
  let t: TestApp;
  let listener: pg.Client;
  const heard: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    listener = new pg.Client({ connectionString: (t.db as unknown as { options: { connectionString: string } }).options.connectionString });
    await listener.connect();
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`LISTEN ${CHANGE_CHANNEL}`);
  });
  afterAll(async () => {
    await listener?.end();
    await t?.close();
  });

  /** A value of the column's type that differs from any a registration writes. */
  function otherValue(column: string, dataType: string): string {
    if (column === 'firmware_version') return `'9.8.7'`;
    switch (dataType) {
      case 'timestamp with time zone':
        return `TIMESTAMPTZ '2001-02-03 04:05:06+00'`;
      case 'integer':
      case 'smallint':
      case 'bigint':
        return `COALESCE(${column}, 0) + 5`;
      case 'character varying':
      case 'text':
        return `'other-' || left(md5(random()::text), 8)`;
      case 'jsonb':
        return `'{"telemetryIntervalSec": 17}'::jsonb`;
      case 'boolean':
        return `NOT COALESCE(${column}, false)`;
      case 'ARRAY':
        return `ARRAY['other-' || left(md5(random()::text), 8)]`;
      default:
        throw new Error(`devices.${column} has type ${dataType}: teach this test a value for it`);
    }
  }

  let markers = 0;
  /**
   * Every notification committed before this call has reached the test's listener: PostgreSQL
   * delivers notifications in the order their transactions committed, so once a marker sent now
   * arrives, a change committed before it has arrived too, or never will. (A fixed wait of 50 ms
   * was too short on a loaded machine: a late notification was counted for the next column.)
   */
  async function feedCaughtUp(): Promise<void> {
    const marker = `test-marker:${++markers}`;
    await t.db.query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, marker]);
    const deadline = Date.now() + 10_000;
    while (!heard.includes(marker)) {
      if (Date.now() > deadline) throw new Error('the marker notification never came back');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  const load = (deviceId: string): Promise<DeviceSnapshot | null> => t.app.get(DeviceSnapshotQueries).load(deviceId);
  const plain = (snapshot: DeviceSnapshot | null) => JSON.parse(JSON.stringify(snapshot)) as unknown;

  it('every column of devices is announced and in the snapshot, or neither (immutable ones aside)', async () => {
    const { rows: columns } = await t.db.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'devices' ORDER BY ordinal_position`,
    );
    const owner = await signUp(t);
    const device = await registerDevice(t.api);
    const other = await registerDevice(t.api, { hardwareId: 'hw-other', firmwareVersion: '0.2.0' });
    const immutable = new Set<string>(IMMUTABLE_DEVICE_COLUMNS);
    const announced = new Set<string>(ANNOUNCED_DEVICE_COLUMNS);
    const mutable = columns.filter((column) => !immutable.has(column.column_name));
    // The other device gets a value of its own in every column, so copying one over changes it.
    for (const { column_name: column, data_type: dataType } of mutable) {
      const value = column === 'owner_id' ? `'${owner.userId}'::uuid` : otherValue(column, dataType);
      await t.db.query(`UPDATE devices SET ${column} = ${value} WHERE device_id = $1`, [other.deviceId]);
    }

    const outcome: Array<{ column: string; announced: boolean; snapshotChanged: boolean }> = [];
    for (const { column_name: column } of mutable) {
      const before = plain(await load(device.deviceId));
      heard.length = 0;
      const { rowCount } = await t.db.query(
        `UPDATE devices d SET ${column} = o.${column} FROM devices o WHERE d.device_id = $1 AND o.device_id = $2 AND d.${column} IS DISTINCT FROM o.${column}`,
        [device.deviceId, other.deviceId],
      );
      expect({ column, changed: rowCount }).toEqual({ column, changed: 1 });
      await feedCaughtUp();
      const wasAnnounced = heard.includes(`device:${device.deviceId}`);
      // The application hears the feed on a connection of its own: an announced change reaches its cache soon, not at once.
      const changed = async () => JSON.stringify(plain(await load(device.deviceId))) !== JSON.stringify(before);
      let snapshotChanged = await changed();
      for (const deadline = Date.now() + 5000; wasAnnounced && !snapshotChanged && Date.now() < deadline; snapshotChanged = await changed()) await new Promise((resolve) => setTimeout(resolve, 20));
      outcome.push({ column, announced: wasAnnounced, snapshotChanged });
    }

    expect(outcome).toEqual(mutable.map(({ column_name: column }) => ({ column, announced: announced.has(column), snapshotChanged: announced.has(column) })));
    expect(mutable.map((column) => column.column_name)).toEqual(expect.arrayContaining([...announced]));
  });
});
