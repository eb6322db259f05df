import { Injectable } from '@nestjs/common';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import { DEVICE_OWNERS } from '../../devices/sql-api.js';
import { CommandStore, type ChangedCommand, type CommandPage, type CommandTransition, type NewCommand } from '../domain/command.store.js';
import { commandIdOf, type CommandState, type CommandType, type DeviceCommand, type PendingCommand } from '../domain/device-command.js';

interface CommandRow {
  command_id: string;
  device_id: string;
  type: CommandType;
  params: Record<string, unknown>;
  state: CommandState;
  created_at: Date;
  expires_at: Date;
  delivered_at: Date | null;
  deliveries: number;
  accepted_at: Date | null;
  finished_at: Date | null;
  output: string | null;
}

const COLUMNS = 'command_id, device_id, type, params, state, created_at, expires_at, delivered_at, deliveries, accepted_at, finished_at, output';
/** The owner of the command's device as the statement sees it: whom its event belongs to. */
const OWNER = `(SELECT o.owner_id FROM ${DEVICE_OWNERS} o WHERE o.device_id = c.device_id) AS owner_id`;

const toCommand = (row: CommandRow): DeviceCommand => ({
  commandId: commandIdOf(row.command_id),
  deviceId: row.device_id,
  type: row.type,
  params: row.params,
  state: row.state,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  deliveredAt: row.delivered_at,
  deliveries: row.deliveries,
  acceptedAt: row.accepted_at,
  finishedAt: row.finished_at,
  output: row.output,
});

const toChanged = (row: CommandRow & { owner_id: string | null }): ChangedCommand => ({ command: toCommand(row), ownerId: row.owner_id });

@Injectable()
export class SqlCommandStore extends CommandStore {
  constructor(private readonly sql: Sql) {
    super();
  }

  queue(command: NewCommand, maxQueued: number, then: (tx: SqlRunner, command: DeviceCommand) => Promise<void>): Promise<DeviceCommand | null> {
    return this.sql.transaction(async (tx) => {
      // One sender at a time per device, so two concurrent sends cannot both pass the count.
      await tx.rows("SELECT pg_advisory_xact_lock(hashtext('device_commands'), hashtext($1))", [command.deviceId]);
      const [{ queued }] = await tx.rows<{ queued: number }>("SELECT count(*)::int AS queued FROM device_commands WHERE device_id = $1 AND state = 'queued'", [command.deviceId]);
      if (queued >= maxQueued) return null;
      const [row] = await tx.rows<CommandRow>(
        `INSERT INTO device_commands (device_id, type, params, state, created_at, expires_at) VALUES ($1, $2, $3, 'queued', $4, $5) RETURNING ${COLUMNS}`,
        [command.deviceId, command.type, JSON.stringify(command.params), command.createdAt, command.expiresAt],
      );
      const queuedCommand = toCommand(row);
      await then(tx, queuedCommand);
      return queuedCommand;
    });
  }

  async find(deviceId: string, sequence: string): Promise<DeviceCommand | null> {
    const [row] = await this.sql.rows<CommandRow>(`SELECT ${COLUMNS} FROM device_commands WHERE command_id = $1 AND device_id = $2`, [sequence, deviceId], 'command-find');
    return row ? toCommand(row) : null;
  }

  async list(deviceId: string, page: CommandPage): Promise<DeviceCommand[]> {
    const rows = await this.sql.rows<CommandRow>(
      `SELECT ${COLUMNS} FROM device_commands
        WHERE device_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2) AND ($3::bigint IS NULL OR command_id < $3)
        ORDER BY command_id DESC LIMIT $4`,
      [deviceId, page.since, page.before, page.limit],
      'command-list',
    );
    return rows.map(toCommand);
  }

  async pending(deviceId: string, now: Date): Promise<PendingCommand[]> {
    const rows = await this.sql.rows<CommandRow>(
      `SELECT ${COLUMNS} FROM device_commands
        WHERE device_id = $1 AND state IN ('queued', 'delivered') AND expires_at > $2
        ORDER BY command_id`,
      [deviceId, now],
      'command-pending',
    );
    return rows.map((row) => {
      const { commandId, type, params, createdAt, expiresAt } = toCommand(row);
      return { commandId, type, params, createdAt, expiresAt };
    });
  }

  markDelivered(deviceId: string, sequences: readonly string[], at: Date, then: (tx: SqlRunner, delivered: ChangedCommand[]) => Promise<void>): Promise<void> {
    return this.sql.transaction(async (tx) => {
      // `was` is the state before this statement: only commands queued until now are newly delivered.
      const rows = await tx.rows<CommandRow & { owner_id: string | null; was: CommandState }>(
        `UPDATE device_commands c
            SET deliveries = c.deliveries + 1, state = 'delivered', delivered_at = COALESCE(c.delivered_at, $3)
           FROM (SELECT command_id, state AS was FROM device_commands WHERE device_id = $1 AND command_id = ANY($2::bigint[]) AND state IN ('queued', 'delivered') FOR UPDATE) before
          WHERE c.command_id = before.command_id
          RETURNING ${COLUMNS.split(', ').map((column) => `c.${column}`).join(', ')}, before.was, ${OWNER}`,
        [deviceId, sequences, at],
      );
      const delivered = rows.filter((row) => row.was === 'queued').map(toChanged);
      if (delivered.length > 0) await then(tx, delivered);
    });
  }

  async markAccepted(deviceId: string, sequence: string, at: Date): Promise<DeviceCommand | null> {
    const [row] = await this.sql.rows<CommandRow>(
      `UPDATE device_commands SET accepted_at = COALESCE(accepted_at, $3)
        WHERE command_id = $1 AND device_id = $2
        RETURNING ${COLUMNS}`,
      [sequence, deviceId, at],
    );
    return row ? toCommand(row) : null;
  }

  transition(deviceId: string, sequence: string, change: CommandTransition, then: (tx: SqlRunner, changed: ChangedCommand) => Promise<void>): Promise<{ command: DeviceCommand; changed: boolean } | null> {
    return this.sql.transaction(async (tx) => {
      const [moved] = await tx.rows<CommandRow & { owner_id: string | null }>(
        `UPDATE device_commands c
            SET state = $3, finished_at = $4, output = COALESCE($5, c.output)
          WHERE c.command_id = $1 AND c.device_id = $2 AND c.state = ANY($6::text[]) AND ($7::timestamptz IS NULL OR c.expires_at <= $7)
          RETURNING ${COLUMNS.split(', ').map((column) => `c.${column}`).join(', ')}, ${OWNER}`,
        [sequence, deviceId, change.to, change.at, change.output ?? null, change.from, change.expiredBy ?? null],
      );
      if (moved) {
        const changed = toChanged(moved);
        await then(tx, changed);
        return { command: changed.command, changed: true };
      }
      const [row] = await tx.rows<CommandRow>(`SELECT ${COLUMNS} FROM device_commands WHERE command_id = $1 AND device_id = $2`, [sequence, deviceId]);
      return row ? { command: toCommand(row), changed: false } : null;
    });
  }
}
