import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Sql } from '../../../shared/database/sql.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { CRLF, csvField } from '../../telemetry/index.js';
import type { Viewer } from '../domain/dashboard-queries.js';
import { DashboardService, type DeviceListFilters, type ListedDevice } from './dashboard.service.js';

/** Devices read at a time while exporting: the export holds one page, never the fleet. */
export const FLEET_EXPORT_PAGE = 200;

/** The columns of the fleet's latest values: one line per device and latest metric (a device with none: one line, the last four empty). */
export const FLEET_LATEST_COLUMNS = ['deviceId', 'name', 'tags', 'hardwareId', 'firmwareVersion', 'online', 'lastSeenAt', 'batteryId', 'metric', 'ts', 'value'] as const;

const line = (fields: readonly string[]): string => fields.map(csvField).join(',') + CRLF;

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
    const first = await this.dashboard.devices(viewer, FLEET_EXPORT_PAGE, undefined, filters);
    const { dashboard, auditLog, sql, clock } = this;
    const lines = (async function* () {
      let devices = 0;
      let complete = false;
      try {
        yield line(FLEET_LATEST_COLUMNS);
        for (let page = first; ; page = await dashboard.devices(viewer, FLEET_EXPORT_PAGE, page.nextCursor!, filters)) {
          devices += page.items.length;
          yield page.items.map(latestLines).join('');
          if (page.nextCursor === null) break;
        }
        complete = true;
      } finally {
        await auditLog.record(sql, { by, action: 'fleet.exported', target: 'fleet', deviceId: null, ownerId: null, at: clock.now(), detail: { export: 'latest', devices, complete, filters } });
      }
    })();
    return { startedAt, lines };
  }
}
