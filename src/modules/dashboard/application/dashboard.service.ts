import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { type FieldError, NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import { decodeCursor, encodeCursor } from '../../../shared/http/cursor.js';
import { type FleetDefaults, FleetDefaultsStore, isDeviceOnline, MAX_TAGS, NAME_MAX_LENGTH, normalizeTag } from '../../devices/index.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import { type ExportParams, type History, type HistoryParams, type TelemetryExport, TelemetryHistoryService } from '../../telemetry/index.js';
import { mayManage, ShareRoleError } from '../../sharing/index.js';
import { DashboardQueries, type DeviceFilters, type DeviceManagerRow, type DeviceSummaryRow, type DeviceVisibilityRow, type Viewer } from '../domain/dashboard-queries.js';

/** The list's filters as the query gave them; DashboardService.devices checks them. */
export interface DeviceListFilters {
  organizationId?: string;
  q?: string;
  /** Each value one tag or several, comma-separated. */
  tag?: string[];
  online?: boolean;
  firmwareVersion?: string;
  socBelow?: number;
}

/** A listed device with `online` as of the moment the list's `online` filter used. */
export type ListedDevice = DeviceSummaryRow & { online: boolean };

/** Devices read at a time by the fleet routes: an action or an export holds one page, never the fleet. */
export const FLEET_PAGE = 200;

/** A page of the device list. */
export interface DevicePage {
  items: ListedDevice[];
  nextCursor: string | null;
}

@Injectable()
export class DashboardService {
  constructor(
    private readonly queries: DashboardQueries,
    private readonly telemetry: TelemetryHistoryService,
    private readonly clock: Clock,
    private readonly defaults: FleetDefaultsStore,
  ) {}

  /** Fleet defaults, for the per-device figures that depend on them (online horizon, desired config version). */
  fleetDefaults(): Promise<FleetDefaults> {
    return this.defaults.current();
  }

  /** A device the viewer may not see answers exactly like one that does not exist. */
  async device(viewer: Viewer, deviceId: string): Promise<DeviceSummaryRow> {
    return visibleOrNotFound(await this.queries.device(viewer, deviceId));
  }

  /** The same check as device() without reading the summary. */
  async visibility(viewer: Viewer, deviceId: string): Promise<DeviceVisibilityRow> {
    return visibleOrNotFound(await this.queries.visibility(viewer, deviceId));
  }

  /** Who may change the device (its name and tags, its configuration); a viewer gets 403 SHARE_ROLE, anyone else the 404 of a device they cannot see. */
  async manageable(viewer: Viewer, deviceId: string): Promise<DeviceManagerRow> {
    const row = visibleOrNotFound(await this.queries.manageable(viewer, deviceId));
    if (!mayManage(row.access)) throw new ShareRoleError();
    return row;
  }

  /**
   * Every device of the list the filters select, for a fleet route: FLEET_PAGE at a time, never
   * the fleet at once. The first page is read here, before anything is returned, so a bad filter
   * is a 400 before the caller starts; `pages()` walks the selection from it, as often as asked.
   */
  async selection(viewer: Viewer, filters: DeviceListFilters): Promise<{ pages(): AsyncGenerator<DevicePage> }> {
    const first = await this.devices(viewer, FLEET_PAGE, undefined, filters);
    const next = (cursor: string) => this.devices(viewer, FLEET_PAGE, cursor, filters);
    return {
      pages: async function* () {
        for (let page = first; ; page = await next(page.nextCursor!)) {
          yield page;
          if (page.nextCursor === null) return;
        }
      },
    };
  }

  /**
   * A page of the visible devices meeting every filter given. The cursor holds the last deviceId
   * only: the next page with the same filters continues after it, so each match comes once.
   */
  async devices(viewer: Viewer, limit: number, cursor: string | undefined, given: DeviceListFilters = {}): Promise<DevicePage> {
    const after = cursor === undefined ? undefined : decodeCursor(cursor, (value) => DEVICE_ID_PATTERN.test(value));
    // One instant and one read of the defaults for the online filter and every row's online field.
    const now = this.clock.now();
    const defaults = await this.defaults.current();
    const filters = parseFilters(given, now, defaults);
    const rows = await this.queries.devices(viewer, filters, limit + 1, after);
    const items = rows.slice(0, limit).map((row) => ({ ...row, online: this.isOnline(row, defaults, now) }));
    return { items, nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1].device_id) : null };
  }

  /** Online by the devices module's one rule (isDeviceOnline); the list's online filter says the same in SQL. */
  isOnline(device: DeviceSummaryRow, defaults: FleetDefaults, now: Date = this.clock.now()): boolean {
    return isDeviceOnline(device.last_telemetry_at, device.config_overrides.telemetryIntervalSec ?? defaults.settings.telemetryIntervalSec, now);
  }

  /** Where the viewer's view of a device's history starts: a later owner sees nothing from before the release that preceded their claim. */
  visibleFrom(viewer: Viewer, device: Pick<DeviceVisibilityRow, 'visible_since'>, from: Date | null): Date | null {
    return !viewer.isAdmin && device.visible_since && (!from || device.visible_since > from) ? device.visible_since : from;
  }

  /**
   * Every record of a visible device in the range, as history shows them to this viewer: a later
   * owner's export starts at their claim. A bad range or battery id is refused first, then a device
   * the viewer cannot see is a 404 always, and only then may the account's or the instance's export
   * cap refuse (TooManyExportsError).
   */
  async export(viewer: Viewer, deviceId: string, params: ExportParams): Promise<TelemetryExport> {
    const query = this.telemetry.exportQuery(params);
    const device = await this.visibility(viewer, deviceId);
    return this.telemetry.openExport(viewer.userId, deviceId, query, this.visibleFrom(viewer, device, null));
  }

  /** The telemetry history of a visible device as this viewer sees it; a bad question is a 400 even for a device they cannot see. */
  async history(viewer: Viewer, deviceId: string, params: HistoryParams): Promise<History> {
    const query = this.telemetry.historyQuery(params);
    const device = await this.visibility(viewer, deviceId);
    return this.telemetry.history(deviceId, query, this.visibleFrom(viewer, device, null));
  }
}

function parseFilters(given: DeviceListFilters, now: Date, defaults: FleetDefaults): DeviceFilters {
  const errors: FieldError[] = [];
  const filters: DeviceFilters = {};
  if (given.q !== undefined) {
    const q = given.q.normalize('NFC').trim();
    if (q.length === 0 || [...q].length > NAME_MAX_LENGTH) errors.push({ field: 'q', message: `q must be 1–${NAME_MAX_LENGTH} characters besides surrounding spaces` });
    else filters.q = q;
  }
  if (given.tag !== undefined) {
    const tags = given.tag.flatMap((value) => value.split(',')).map(normalizeTag);
    const distinct = new Set(tags);
    if (tags.length === 0 || distinct.has(null)) errors.push({ field: 'tag', message: 'tag must be tags of 1–32 of a–z 0–9 . _ - (repeated or comma-separated)' });
    else if (distinct.size > MAX_TAGS) errors.push({ field: 'tag', message: `at most ${MAX_TAGS} distinct tags (a device has no more)` });
    else filters.tags = [...distinct] as string[];
  }
  if (given.firmwareVersion !== undefined) {
    if (!FirmwareVersion.PATTERN.test(given.firmwareVersion)) errors.push({ field: 'firmwareVersion', message: 'firmwareVersion must be a dotted numeric version such as 0.1.4' });
    else filters.firmwareVersion = given.firmwareVersion;
  }
  if (given.socBelow !== undefined) {
    if (!Number.isFinite(given.socBelow) || given.socBelow < 0 || given.socBelow > 100) errors.push({ field: 'socBelow', message: 'socBelow must be a number from 0 to 100' });
    else filters.socBelow = given.socBelow;
  }
  if (given.organizationId !== undefined) filters.organizationId = given.organizationId;
  if (given.online !== undefined) filters.online = { value: given.online, now, defaultIntervalSec: defaults.settings.telemetryIntervalSec };
  if (errors.length > 0) throw new ValidationFailedError(errors);
  return filters;
}

function visibleOrNotFound<T>(row: T | null): T {
  if (!row) throw new NotFoundError('No visible device has this id.');
  return row;
}
