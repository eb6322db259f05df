/** The commands module's public surface: what other modules and the composition root may import. */
export { CommandsModule } from './commands.module.js';
export { CommandWaiters } from './application/command-waiters.js';
import { DeviceCommandRecord } from './infrastructure/device-command.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const COMMANDS_RECORDS = [DeviceCommandRecord];
