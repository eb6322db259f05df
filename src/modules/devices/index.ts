/** The devices module's public surface: what other modules and the composition root may import. */
export { DeviceReturnsModule, DevicesModule } from './devices.module.js';
export { DeviceOwnershipService } from './application/device-ownership.service.js';
export { DeviceLabelsService } from './application/device-labels.service.js';
export { DeviceConfigService, type DeviceConfigView } from './application/device-config.service.js';
export { DeviceSnapshots } from './application/device-snapshots.js';
export { FleetDefaultsStore } from './application/fleet-defaults.js';
export type { Device } from './domain/device.js';
export type { DeviceSnapshot } from './domain/device-snapshot.queries.js';
export type { ConfigOverrides, ConfigPatch, DeviceConfig, FleetDefaults } from './domain/device-config.js';
export { ClaimCode } from './domain/claim-code.js';
export { DeviceDecommissionedError } from './domain/device.errors.js';
export { MAX_TAGS, NAME_MAX_LENGTH, normalizeTag, TAG_MAX_LENGTH, TAG_PATTERN } from './domain/device-labels.js';
export { ConfigOverridesPatchRequest, DashboardDeviceConfigResponse } from './http/device-config.dto.js';
export { DeviceDirectory } from './domain/device-directory.js';
export { DeviceReports } from './domain/device-reports.js';
export { isDeviceOnline, ONLINE_WITHIN_INTERVALS } from './domain/device-online.js';
export * from './sql-api.js';
import { ConfigDefaultsRecord } from './infrastructure/config-defaults.record.js';
import { DeviceRecord, DeviceRefreshTokenRecord, RegistrationAllowlistRecord } from './infrastructure/device.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const DEVICES_RECORDS = [DeviceRecord, DeviceRefreshTokenRecord, RegistrationAllowlistRecord, ConfigDefaultsRecord];
