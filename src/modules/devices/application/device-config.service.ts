import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { DomainError, NotFoundError, UnauthorizedError } from '../../../shared/domain-error.js';
import { strongTag } from '../../../shared/http/etag.js';
import type { Device } from '../domain/device.js';
import { DeviceConfigRepository } from '../domain/device-config.repository.js';
import { DeviceRepository } from '../domain/device.repository.js';
import type { DeviceSnapshot } from '../domain/device-snapshot.queries.js';
import { effectiveConfig, validateConfigPatch, type ConfigOverrides, type ConfigPatch, type DeviceConfig, type FleetDefaults } from '../domain/device-config.js';
import { DeviceSnapshots } from './device-snapshots.js';
import { FleetDefaultsStore } from './fleet-defaults.js';
import { EventLog } from '../../events/index.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';

export class PreconditionFailedError extends DomainError {
  constructor() {
    super('PRECONDITION_FAILED', 'precondition-failed', 'If-Match does not name the current version; read it again and retry.');
  }
}

export class ConfigVersionUnknownError extends DomainError {
  constructor(current: number) {
    super('CONFIG_VERSION_UNKNOWN', 'invalid', `The device's configuration is at version ${current}; a gateway can only apply a version it was given.`, {
      errors: [{ field: 'version', message: `version must be at most ${current}` }],
    });
  }
}

/** What the dashboard shows of a device's configuration. */
export interface DeviceConfigView {
  deviceId: string;
  config: DeviceConfig;
  overrides: ConfigOverrides;
  appliedVersion: number | null;
  appliedAt: Date | null;
  etag: string;
}

export const configTag = (config: DeviceConfig): string => strongTag(`config-${config.version}`);
export const defaultsTag = (defaults: FleetDefaults): string => strongTag(`defaults-${defaults.revision}`);

/** Fleet defaults merged with device overrides; what gateways poll and what operators edit. */
@Injectable()
export class DeviceConfigService {
  constructor(
    private readonly snapshots: DeviceSnapshots,
    private readonly devices: DeviceRepository,
    private readonly defaults: FleetDefaultsStore,
    private readonly repository: DeviceConfigRepository,
    private readonly events: EventLog,
    private readonly clock: Clock,
    private readonly audit: AuditLog,
  ) {}

  async of(device: Pick<DeviceSnapshot, 'config' | 'registeredAt'>): Promise<DeviceConfig> {
    return effectiveConfig(await this.defaults.current(), device.config, device.registeredAt);
  }

  /** The calling gateway's configuration, from memory when nothing changed (no query per poll). */
  async forGateway(deviceId: string): Promise<DeviceConfig> {
    const device = await this.snapshots.get(deviceId);
    if (!device) throw new UnauthorizedError('The device no longer exists.');
    return this.of(device);
  }

  async recordApplied(deviceId: string, version: number): Promise<void> {
    const current = await this.forGateway(deviceId);
    if (version > current.version) throw new ConfigVersionUnknownError(current.version);
    const now = this.clock.now();
    await this.repository.recordApplied(deviceId, version, now, (tx, ownerId) =>
      this.events.record(tx, { type: 'config.applied', deviceId, ownerId, occurredAt: now, data: { version } }).then(() => undefined),
    );
  }

  /** For a device the caller may see (the dashboard checked visibility). */
  async view(device: Device): Promise<DeviceConfigView> {
    const config = await this.of(device);
    return { deviceId: device.deviceId, config, overrides: device.config.overrides, appliedVersion: device.appliedConfigVersion, appliedAt: device.configAppliedAt, etag: configTag(config) };
  }

  /**
   * The overrides a PATCH asks for, checked: a ValidationFailedError naming each key at fault. A
   * change of many devices checks its body here once, before it changes any of them.
   */
  checkOverridesPatch(body: unknown): ConfigPatch {
    return validateConfigPatch(body, { allowNull: true });
  }

  async patchOverrides(deviceId: string, body: unknown, ifMatch: (etag: string) => boolean, by: AuditContext): Promise<DeviceConfigView> {
    const patch = this.checkOverridesPatch(body);
    if (!(await this.applyOverrides(deviceId, patch, by, ifMatch))) throw new NotFoundError('No visible device has this id.');
    // The whole row, read now: the view shows what the gateway applied, which snapshots do not hold.
    const device = await this.devices.findById(deviceId);
    if (!device) throw new NotFoundError('No visible device has this id.');
    return this.view(device);
  }

  /**
   * Applies overrides checked by checkOverridesPatch, with a device.config_changed entry when a value
   * changed; `ifMatch` sees the configuration's ETag before the change and may refuse it
   * (PreconditionFailedError). False when the device does not exist.
   */
  async applyOverrides(deviceId: string, patch: ConfigPatch, by: AuditContext, ifMatch: (etag: string) => boolean = () => true): Promise<boolean> {
    const defaults = await this.defaults.current();
    const registeredAt = (await this.snapshots.get(deviceId))?.registeredAt;
    if (!registeredAt) return false;
    const now = this.clock.now();
    const state = await this.repository.patchOverrides(
      deviceId,
      patch,
      now,
      (current) => {
        if (!ifMatch(configTag(effectiveConfig(defaults, current, registeredAt)))) throw new PreconditionFailedError();
      },
      (tx) => this.audit.record(tx, { by, action: 'device.config_changed', target: `device:${deviceId}`, deviceId, detail: { patch }, at: now }),
    );
    return state !== null;
  }

  currentDefaults(): Promise<FleetDefaults> {
    return this.defaults.current();
  }

  async patchDefaults(body: unknown, ifMatch: (etag: string) => boolean, by: AuditContext): Promise<FleetDefaults> {
    const patch = validateConfigPatch(body, { allowNull: false });
    const now = this.clock.now();
    return this.defaults.update(
      patch,
      now,
      (current) => {
        if (!ifMatch(defaultsTag(current))) throw new PreconditionFailedError();
      },
      (tx) => this.audit.record(tx, { by, action: 'config.defaults_changed', target: 'config_defaults', detail: { patch }, at: now }),
    );
  }
}
