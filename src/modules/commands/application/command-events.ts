import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { EventLog } from '../../events/index.js';
import type { DeviceCommand } from '../domain/device-command.js';

/** The event of a command's new state (command.queued, command.delivered, …), in the change's transaction. */
export function recordCommandEvent(events: EventLog, tx: SqlRunner, command: DeviceCommand, ownerId: string | null, at: Date): Promise<string> {
  return events.record(tx, {
    type: `command.${command.state}`,
    deviceId: command.deviceId,
    ownerId,
    occurredAt: at,
    data: { commandId: command.commandId, commandType: command.type },
  });
}
