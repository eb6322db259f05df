/** The commands module's public surface: what other modules and the composition root may import. */
export { CommandsModule } from './commands.module.js';
export { CommandWaiters } from './application/command-waiters.js';
export { CommandsService, type SendCommand } from './application/commands.service.js';
export { TooManyCommandsError } from './domain/commands.errors.js';
export { MAX_QUEUED_PER_DEVICE } from './domain/device-command.js';
export { SendCommandRequest } from './http/commands.dto.js';
import { DeviceCommandRecord } from './infrastructure/device-command.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const COMMANDS_RECORDS = [DeviceCommandRecord];
