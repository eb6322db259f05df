import { DataSource } from 'typeorm';
import { RecordingAuditLog } from '../../../../test/fakes/audit/recording-audit-log.js';
import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { InMemoryDashboardQueries } from '../../../../test/fakes/dashboard/in-memory-dashboard-queries.js';
import { InMemoryFleetDefaultsStore } from '../../../../test/fakes/devices/in-memory-fleet-defaults-store.js';
import { InMemoryTelemetryHistoryQueries } from '../../../../test/fakes/telemetry/in-memory-telemetry-history-queries.js';
import { loadEnv } from '../../../config/env.js';
import { Sql } from '../../../shared/database/sql.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { SYSTEM } from '../../audit/index.js';
import { ExportSlots, TooManyExportsError } from '../../telemetry/application/export-slots.js';
import { TelemetryHistoryService } from '../../telemetry/application/telemetry-history.service.js';
import type { Viewer } from '../domain/dashboard-queries.js';
import { DashboardService } from './dashboard.service.js';
import { FleetExport } from './fleet-export.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const HOUR = 3_600_000;
const ALICE: Viewer = { userId: 'a1a1a1a1-0000-4000-8000-000000000001', isAdmin: false };
const RANGE = { from: new Date(NOW.getTime() - 2 * HOUR).toISOString(), to: NOW.toISOString() };

function setUp() {
  const queries = new InMemoryDashboardQueries();
  const telemetry = new InMemoryTelemetryHistoryQueries();
  const clock = new FixedClock(NOW);
  const slots = new ExportSlots(loadEnv({ NODE_ENV: 'test', DB_POOL_SIZE: '10', EXPORT_MAX_PER_USER: '2', EXPORT_MAX_CONCURRENT: '3' }));
  const history = new TelemetryHistoryService(telemetry, clock, slots);
  const audit = new RecordingAuditLog();
  // The audit entry is written outside a transaction: the recording log never uses the runner.
  const sql = new Sql(new DataSource({ type: 'postgres' }));
  const fleet = new FleetExport(new DashboardService(queries, history, clock, new InMemoryFleetDefaultsStore()), history, audit, sql, clock);
  return { queries, telemetry, slots, audit, fleet };
}

const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);

async function readAll(lines: AsyncGenerator<string>): Promise<string> {
  let text = '';
  for await (const chunk of lines) text += chunk;
  return text;
}

describe('FleetExport.telemetry', () => {
  it("ends in an error, rather than leave values out, when a device's records gain a metric after the columns were read", async () => {
    const { queries, telemetry, slots, audit, fleet } = setUp();
    queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });
    queries.add({ device_id: 'gw-0002', owner_id: ALICE.userId });
    telemetry.add('gw-0001', { ts: at(-HOUR), batteryId: 'main', metrics: { soc: 50 } });
    telemetry.add('gw-0002', { ts: at(-HOUR), batteryId: 'main', metrics: { soc: 40 } });

    const exported = await fleet.telemetry(ALICE, {}, RANGE, SYSTEM);
    // Stored once the columns are read: a late record with a metric none of the range had.
    telemetry.add('gw-0002', { ts: at(-HOUR + 1000), batteryId: 'main', metrics: { soc: 41, rssi: -70 } });

    const lines: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of exported.lines) lines.push(chunk);
      })(),
    ).rejects.toThrow(/gw-0002 hold metrics stored after the export's columns were read \(rssi\)/);
    expect(lines).toEqual(['deviceId,ts,batteryId,soc\r\n', `gw-0001,${at(-HOUR).toISOString()},main,50\r\n`]);
    expect({ slots: slots.inUse, openExports: telemetry.openExports }).toEqual({ slots: 0, openExports: 0 });
    expect(audit.recorded.map((entry) => entry.detail)).toEqual([{ export: 'telemetry', devices: 1, complete: false, filters: {}, ...RANGE }]);
  });

  it('an answer never read: close() gives the export slot back and records it as incomplete, once', async () => {
    const { queries, telemetry, slots, audit, fleet } = setUp();
    queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });
    telemetry.add('gw-0001', { ts: at(-HOUR), batteryId: 'main', metrics: { soc: 50 } });

    const exported = await fleet.telemetry(ALICE, {}, RANGE, SYSTEM);
    expect(slots.inUse).toBe(1);
    await exported.close();
    await exported.close();

    expect(slots.inUse).toBe(0);
    expect(audit.recorded.map((entry) => entry.detail)).toEqual([{ export: 'telemetry', devices: 0, complete: false, filters: {}, ...RANGE }]);
  });

  it("a bad range or filter is refused before a slot is taken; past the account's cap, TooManyExportsError and no entry", async () => {
    const { queries, slots, audit, fleet } = setUp();
    queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });

    await expect(fleet.telemetry(ALICE, {}, { from: RANGE.to, to: RANGE.from }, SYSTEM)).rejects.toThrow(ValidationFailedError);
    await expect(fleet.telemetry(ALICE, { socBelow: 101 }, RANGE, SYSTEM)).rejects.toThrow(ValidationFailedError);
    expect(slots.inUse).toBe(0);

    const held = [await fleet.telemetry(ALICE, {}, RANGE, SYSTEM), await fleet.telemetry(ALICE, {}, RANGE, SYSTEM)];
    await expect(fleet.telemetry(ALICE, {}, RANGE, SYSTEM)).rejects.toThrow(TooManyExportsError);
    for (const exported of held) expect(await readAll(exported.lines)).toBe(`deviceId,ts,batteryId\r\n`);
    expect(slots.inUse).toBe(0);
    expect(audit.recorded.map((entry) => entry.detail?.complete)).toEqual([true, true]);
  });
});
