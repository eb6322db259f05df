import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { Sql } from '../../../shared/database/sql.js';
import { AuditLog, type AuditAction, type AuditContext } from '../../audit/index.js';
import { CommandsService, TooManyCommandsError, type SendCommand } from '../../commands/index.js';
import { DeviceConfigService } from '../../devices/index.js';
import { mayManage, ShareRoleError } from '../../sharing/index.js';
import type { Viewer } from '../domain/dashboard-queries.js';
import { DashboardService, type DeviceListFilters, type ListedDevice } from './dashboard.service.js';

/**
 * Whose audit log a fleet action's entry also belongs to: the organization its filter named, once
 * the action reached any of its devices (which only its members' can); otherwise no one's but
 * the administrators'.
 */
export const fleetLogOwner = (filters: DeviceListFilters, reached: number): string | null => (filters.organizationId !== undefined && reached > 0 ? filters.organizationId : null);

/** What a fleet action did: the selected devices it acted on, and those the caller may not act on. */
export interface FleetOutcome {
  devices: number;
  skipped: number;
}

/** A command to the fleet: as any action, and the devices skipped because their queue was full. */
export interface FleetCommanded extends FleetOutcome {
  queueFull: number;
}

/**
 * Changes of every device the list's filters select, as the single-device routes make them (each
 * device in its own transaction, with its own audit entry), walked a page at a time. The request
 * is checked before any device is touched. A device the caller sees but may not change (a viewer's,
 * by a share or an organization role) is skipped and counted, as is one whose access went between
 * reading its page and changing it. Each action is one audit entry with its counts and filters,
 * written also when it stopped part way (then `complete: false`).
 */
@Injectable()
export class FleetActions {
  constructor(
    private readonly dashboard: DashboardService,
    private readonly configs: DeviceConfigService,
    private readonly commands: CommandsService,
    private readonly auditLog: AuditLog,
    private readonly sql: Sql,
    private readonly clock: Clock,
  ) {}

  /** The configuration overrides of a device's PATCH, on every selected device the viewer may configure; a bad body is a 400 and changes none. */
  async configure(viewer: Viewer, filters: DeviceListFilters, body: unknown, by: AuditContext): Promise<FleetOutcome> {
    const patch = this.configs.checkOverridesPatch(body);
    const counts: FleetOutcome = { devices: 0, skipped: 0 };
    await this.each(viewer, filters, by, 'fleet.configured', counts, { patch }, async (device) => {
      try {
        // Asked again as the device's own PATCH asks: the page may be a moment old.
        await this.dashboard.manageable(viewer, device.device_id);
        counts[(await this.configs.applyOverrides(device.device_id, patch, by)) ? 'devices' : 'skipped'] += 1;
      } catch (error) {
        if (error instanceof ShareRoleError || error instanceof NotFoundError) counts.skipped += 1;
        else throw error;
      }
    });
    return counts;
  }

  /**
   * The command to every selected device the viewer may command. A device with a full queue is
   * skipped and counted (queueFull), not a failure of the whole action: the others still get it.
   */
  async command(viewer: Viewer, filters: DeviceListFilters, request: SendCommand, by: AuditContext): Promise<FleetCommanded> {
    this.commands.check(request);
    const counts: FleetCommanded = { devices: 0, skipped: 0, queueFull: 0 };
    await this.each(viewer, filters, by, 'fleet.commanded', counts, { type: request.type }, async (device) => {
      try {
        await this.commands.send(viewer, device.device_id, request, by);
        counts.devices += 1;
      } catch (error) {
        if (error instanceof TooManyCommandsError) counts.queueFull += 1;
        else if (error instanceof ShareRoleError || error instanceof NotFoundError) counts.skipped += 1;
        else throw error;
      }
    });
    return counts;
  }

  /**
   * Hands each selected device the viewer may change to `act`, counting the others as skipped. The
   * first page is read before anything changes, so a bad filter is still a 400 with nothing done.
   */
  private async each(
    viewer: Viewer,
    filters: DeviceListFilters,
    by: AuditContext,
    action: AuditAction,
    counts: FleetOutcome,
    detail: Record<string, unknown>,
    act: (device: ListedDevice) => Promise<void>,
  ): Promise<void> {
    const selection = await this.dashboard.selection(viewer, filters);
    let complete = false;
    try {
      for await (const page of selection.pages()) {
        for (const device of page.items) {
          if (mayManage(device.access)) await act(device);
          else counts.skipped += 1;
        }
      }
      complete = true;
    } finally {
      const ownerId = fleetLogOwner(filters, counts.devices + counts.skipped);
      await this.auditLog.record(this.sql, { by, action, target: 'fleet', deviceId: null, ownerId, at: this.clock.now(), detail: { ...detail, ...counts, complete, filters } });
    }
  }
}
