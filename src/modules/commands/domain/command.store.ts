import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { CommandState, CommandType, DeviceCommand, PendingCommand } from './device-command.js';

export interface NewCommand {
  deviceId: string;
  type: CommandType;
  params: Record<string, unknown>;
  createdAt: Date;
  expiresAt: Date;
}

/** A command as a change left it, with the device's owner then (whom its event belongs to). */
export interface ChangedCommand {
  command: DeviceCommand;
  ownerId: string | null;
}

export interface CommandTransition {
  /** The states the command may be in for the change to happen. */
  from: readonly CommandState[];
  to: CommandState;
  at: Date;
  output?: string | null;
  /** Only when the command's expiry is at or before this instant (expiry). */
  expiredBy?: Date;
}

export interface CommandPage {
  /** Commands sent at or after this instant only (a later owner's view starts at their claim); null: all. */
  since: Date | null;
  /** Older than this command sequence (the cursor); null: from the newest. */
  before: string | null;
  limit: number;
}

/** The device_commands table. `then` callbacks run in the change's transaction (its event, its audit entry, its jobs). */
export abstract class CommandStore {
  /** Queues the command unless the device already has `maxQueued` queued (null then, nothing written). */
  abstract queue(command: NewCommand, maxQueued: number, then: (tx: SqlRunner, command: DeviceCommand) => Promise<void>): Promise<DeviceCommand | null>;

  abstract find(deviceId: string, sequence: string): Promise<DeviceCommand | null>;

  /** A device's commands, newest first. */
  abstract list(deviceId: string, page: CommandPage): Promise<DeviceCommand[]>;

  /** What the gateway's poll hands out: queued or delivered, not expired at `now`, oldest first. */
  abstract pending(deviceId: string, now: Date): Promise<PendingCommand[]>;

  /**
   * Counts one more delivery of each command given that is still pending; those queued until now
   * become delivered and are handed to `then` (one event each), in the same transaction.
   */
  abstract markDelivered(deviceId: string, sequences: readonly string[], at: Date, then: (tx: SqlRunner, delivered: ChangedCommand[]) => Promise<void>): Promise<void>;

  /** Notes that the gateway started on a pending command (first time only); the command as it is, or null when it does not exist. */
  abstract markAccepted(deviceId: string, sequence: string, at: Date): Promise<DeviceCommand | null>;

  /**
   * Moves the command to `change.to` when it is in one of `change.from` (and due, for an expiry);
   * `then` runs in the transaction only when it moved. Null when the command does not exist;
   * `changed` false when it was in another state (the command as it is then).
   */
  abstract transition(deviceId: string, sequence: string, change: CommandTransition, then: (tx: SqlRunner, changed: ChangedCommand) => Promise<void>): Promise<{ command: DeviceCommand; changed: boolean } | null>;
}
