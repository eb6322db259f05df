/** The sharing module's public surface: what other modules and the composition root may import. */
export { SharingModule } from './sharing.module.js';
export { SharingService } from './application/sharing.service.js';
export { DeviceAccess } from './application/device-access.js';
export { DEVICE_ROLES, type DeviceGrant, type DeviceRole, type DeviceViewer, type ShareRole, mayManage } from './domain/device-share.js';
export { ShareRoleError } from './domain/sharing.errors.js';
export { parseShareChanges, SHARES_TOPIC } from './domain/share.store.js';
export * from './sql-api.js';
import { DeviceShareRecord } from './infrastructure/device-share.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const SHARING_RECORDS = [DeviceShareRecord];
