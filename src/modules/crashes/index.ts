/** The crashes module's public surface: what other modules and the composition root may import. */
export { CrashesModule } from './crashes.module.js';
export { CrashesService } from './application/crashes.service.js';
export * from './sql-api.js';
import { DeviceCrashRecord } from './infrastructure/device-crash.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const CRASHES_RECORDS = [DeviceCrashRecord];
