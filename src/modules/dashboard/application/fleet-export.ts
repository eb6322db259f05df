import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Sql } from '../../../shared/database/sql.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { CRLF, csvField, csvLines, TelemetryHistoryService, type DevicesExport, type ExportParams, type RecordExport } from '../../telemetry/index.js';
import type { Viewer } from '../domain/dashboard-queries.js';
import { DashboardService, type DeviceListFilters, type DevicePage, type ListedDevice } from './dashboard.service.js';
import { fleetLogOwner } from './fleet-actions.js';
import { byCodePoint } from '../../../shared/kernel/code-point-order.js';

/** The columns of the fleet's latest values: one line per device and latest metric (a device with none: one line, the last four empty). */
export const FLEET_LATEST_COLUMNS = ['deviceId', 'name', 'tags', 'hardwareId', 'firmwareVersion', 'online', 'lastSeenAt', 'batteryId', 'metric', 'ts', 'value'] as const;

/** The columns of the fleet's telemetry before its metrics: the per-device export's, after the device. */
export const FLEET_TELEMETRY_COLUMNS = ['deviceId', 'ts', 'batteryId'] as const;

const line = (fields: readonly string[]): string => fields.map(csvField).join(',') + CRLF;

/** A fleet telemetry export under way: the range it covers, its lines, and close(), which the caller must call however the answer ends. */
export interface FleetTelemetryExport {
  from: Date;
  to: Date;
  lines: AsyncGenerator<string>;
  close(): Promise<void>;
}

/** A device's lines: what it is, then each latest metric as the viewer sees it. */
function latestLines(device: ListedDevice): string {
  const about = [device.device_id, device.name ?? '', device.tags.join(' '), device.hardware_id, device.firmware_version, String(device.online), device.last_seen_at?.toISOString() ?? ''];
  const metrics = device.latest ?? [];
  if (metrics.length === 0) return line([...about, '', '', '', '']);
  return metrics.map((metric) => line([...about, metric.batteryId, metric.metric, new Date(metric.ts).toISOString(), Number.isFinite(metric.value) ? String(metric.value) : ''])).join('');
}

/**
 * Fleet exports: the devices the list's filters select, as CSV, read a page at a time as the client
 * takes the answer. Each export is one audit entry naming how many devices it held.
 */
@Injectable()
export class FleetExport {
  constructor(
    private readonly dashboard: DashboardService,
    private readonly history: TelemetryHistoryService,
    private readonly auditLog: AuditLog,
    private readonly sql: Sql,
    private readonly clock: Clock,
  ) {}

  /**
   * The latest values of every device the viewer sees that meets the filters. The first page is
   * read before anything is sent, so a bad filter is still a 400; the entry is written when the
   * export ends, also when the client went away (then `complete: false`).
   */
  async latest(viewer: Viewer, filters: DeviceListFilters, by: AuditContext): Promise<{ startedAt: Date; lines: AsyncGenerator<string> }> {
    const startedAt = this.clock.now();
    const selection = await this.dashboard.selection(viewer, filters);
    const { auditLog, sql, clock } = this;
    const lines = (async function* () {
      let devices = 0;
      let complete = false;
      try {
        yield line(FLEET_LATEST_COLUMNS);
        for await (const page of selection.pages()) {
          devices += page.items.length;
          yield page.items.map(latestLines).join('');
        }
        complete = true;
      } finally {
        const ownerId = fleetLogOwner(filters, devices);
        await auditLog.record(sql, { by, action: 'fleet.exported', target: 'fleet', deviceId: null, ownerId, at: clock.now(), detail: { export: 'latest', devices, complete, filters } });
      }
    })();
    return { startedAt, lines };
  }

  /**
   * Every record in the range of every device the viewer sees that meets the filters, as the
   * per-device export writes them after a deviceId column, device by device, each from where the
   * viewer's view of it starts (a later owner's at their claim). A bad range or filter is a 400,
   * and a full export cap a 429, before anything is read. The columns are the metrics of all of
   * them, read first a page of devices at a time; then each device's records are read in batches as
   * the client takes the answer. Should a device's records hold a metric the header lacks (stored
   * since its names were read), the answer ends in an error rather than leave values out. Holds an
   * export slot until close(), which writes the audit entry (`complete: false` unless every
   * device's records went out).
   */
  async telemetry(viewer: Viewer, filters: DeviceListFilters, params: ExportParams, by: AuditContext): Promise<FleetTelemetryExport> {
    const query = this.history.exportQuery(params);
    const selection = await this.dashboard.selection(viewer, filters);
    const records = this.history.openDevicesExport(viewer.userId, query);
    let metrics: string[];
    try {
      metrics = await this.metricsOf(viewer, selection.pages(), records);
    } catch (error) {
      records.close();
      throw error;
    }
    const { dashboard, auditLog, sql, clock } = this;
    const known = new Set(metrics);
    const range = { from: query.range.from.toISOString(), to: query.range.to.toISOString(), ...(query.batteryId === null ? {} : { batteryId: query.batteryId }) };
    let devices = 0;
    let complete = false;
    let part: RecordExport | null = null;
    let closing: Promise<void> | null = null;
    const close = (): Promise<void> =>
      (closing ??= (async () => {
        try {
          await part?.close();
        } finally {
          records.close();
          const ownerId = fleetLogOwner(filters, devices);
          await auditLog.record(sql, { by, action: 'fleet.exported', target: 'fleet', deviceId: null, ownerId, at: clock.now(), detail: { export: 'telemetry', devices, complete, filters, ...range } });
        }
      })());
    const lines = (async function* () {
      try {
        yield line([...FLEET_TELEMETRY_COLUMNS, ...metrics]);
        for await (const page of selection.pages()) {
          for (const device of page.items) {
            const opened = await records.records(device.device_id, dashboard.visibleFrom(viewer, device, null));
            part = opened;
            try {
              const unknown = opened.metrics.filter((metric) => !known.has(metric));
              if (unknown.length > 0) throw new Error(`The records of ${device.device_id} hold metrics stored after the export's columns were read (${unknown.join(', ')}): the export ends cut.`);
              for await (const batch of opened.batches()) yield csvLines(batch, metrics, device.device_id);
            } finally {
              part = null;
              await opened.close();
            }
            devices += 1;
          }
        }
        complete = true;
      } finally {
        await close();
      }
    })();
    return { ...query.range, lines, close };
  }

  /** The metric names of every selected device's records in the range, as each will be read: the export's columns. */
  private async metricsOf(viewer: Viewer, pages: AsyncGenerator<DevicePage>, records: DevicesExport): Promise<string[]> {
    const names = new Set<string>();
    for await (const page of pages) {
      for (const device of page.items) {
        for (const name of await records.metricNames(device.device_id, this.dashboard.visibleFrom(viewer, device, null))) names.add(name);
      }
    }
    return [...names].sort(byCodePoint);
  }
}
