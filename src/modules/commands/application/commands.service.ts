import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { JobQueue } from '../../../shared/jobs/job-queue.js';
import { jobIdFor } from '../../../shared/jobs/job-id.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { EventLog } from '../../events/index.js';
import { DeviceAccess, type DeviceGrant, type DeviceViewer } from '../../sharing/index.js';
import { CommandStore } from '../domain/command.store.js';
import { CommandNotFoundError, CommandNotQueuedError, TooManyCommandsError } from '../domain/commands.errors.js';
import { commandSequenceOf, DEFAULT_TTL_SEC, MAX_QUEUED_PER_DEVICE, parseCommandParams, type CommandType, type DeviceCommand } from '../domain/device-command.js';
import { recordCommandEvent } from './command-events.js';
import { EXPIRE_COMMAND_QUEUE, type ExpiryJob } from './expire-command.js';

export interface SendCommand {
  type: CommandType;
  params?: unknown;
  ttlSec?: number;
}

export interface CommandsPage {
  /** Older than this command (the cursor's); null from the newest. */
  before: string | null;
  limit: number;
}

/**
 * Commands as the dashboard sends and follows them: sent by whoever may change the device (owner,
 * installer, administrator), read by whoever sees it. Every send and cancellation is audited and
 * every state change an event, in the change's transaction; the expiry is a job queued with it.
 */
@Injectable()
export class CommandsService {
  constructor(
    private readonly store: CommandStore,
    private readonly access: DeviceAccess,
    private readonly events: EventLog,
    private readonly audit: AuditLog,
    private readonly jobs: JobQueue,
    private readonly clock: Clock,
  ) {}

  /**
   * Refuses a command no gateway could take (unknown or out-of-range parameters) with the
   * ValidationFailedError send() would answer: a send to many devices checks it once, before any.
   */
  check(request: SendCommand): void {
    parseCommandParams(request.type, request.params);
  }

  /** Queues the command for one device; a device with MAX_QUEUED_PER_DEVICE queued already is a TooManyCommandsError. */
  async send(viewer: DeviceViewer, deviceId: string, request: SendCommand, by: AuditContext): Promise<DeviceCommand> {
    const grant = await this.access.toManage(viewer, deviceId);
    const params = parseCommandParams(request.type, request.params);
    const ttlSec = request.ttlSec ?? DEFAULT_TTL_SEC;
    const now = this.clock.now();
    const command = await this.store.queue({ deviceId, type: request.type, params, createdAt: now, expiresAt: new Date(now.getTime() + ttlSec * 1000) }, MAX_QUEUED_PER_DEVICE, async (tx, queued) => {
      await recordCommandEvent(this.events, tx, queued, grant.ownerId, now);
      await this.audit.record(tx, { by, action: 'device.command_sent', target: `command:${queued.commandId}`, deviceId, detail: { commandId: queued.commandId, type: queued.type, ttlSec }, at: now });
      const expiry: ExpiryJob = { deviceId, commandId: queued.commandId };
      await this.jobs.send(EXPIRE_COMMAND_QUEUE, expiry, { id: jobIdFor(EXPIRE_COMMAND_QUEUE, queued.commandId), startAfterSec: ttlSec }, tx);
    });
    if (!command) throw new TooManyCommandsError();
    return command;
  }

  async list(viewer: DeviceViewer, deviceId: string, page: CommandsPage): Promise<DeviceCommand[]> {
    const grant = await this.access.toSee(viewer, deviceId);
    return this.store.list(deviceId, { since: sinceOf(grant), before: page.before, limit: page.limit });
  }

  async get(viewer: DeviceViewer, deviceId: string, commandId: string): Promise<DeviceCommand> {
    const grant = await this.access.toSee(viewer, deviceId);
    return (await this.visible(grant, deviceId, commandId)).command;
  }

  /** Cancels a command the gateway has not fetched yet; cancelling it again answers it as it is. */
  async cancel(viewer: DeviceViewer, deviceId: string, commandId: string, by: AuditContext): Promise<DeviceCommand> {
    const grant = await this.access.toManage(viewer, deviceId);
    const { sequence } = await this.visible(grant, deviceId, commandId);
    const now = this.clock.now();
    const outcome = await this.store.transition(deviceId, sequence, { from: ['queued'], to: 'cancelled', at: now }, async (tx, { command, ownerId }) => {
      await recordCommandEvent(this.events, tx, command, ownerId, now);
      await this.audit.record(tx, { by, action: 'device.command_cancelled', target: `command:${command.commandId}`, deviceId, detail: { commandId: command.commandId, type: command.type }, at: now });
    });
    if (!outcome) throw new CommandNotFoundError();
    if (!outcome.changed && outcome.command.state !== 'cancelled') throw new CommandNotQueuedError(outcome.command.state);
    return outcome.command;
  }

  /** The command, if the viewer's view of the device's history reaches it (a later owner's starts at their claim). */
  private async visible(grant: DeviceGrant, deviceId: string, commandId: string): Promise<{ command: DeviceCommand; sequence: string }> {
    const sequence = commandSequenceOf(commandId);
    const command = sequence === null ? null : await this.store.find(deviceId, sequence);
    const since = sinceOf(grant);
    if (sequence === null || !command || (since !== null && command.createdAt < since)) throw new CommandNotFoundError();
    return { command, sequence };
  }
}

const sinceOf = (grant: DeviceGrant): Date | null => (grant.role === 'admin' ? null : grant.visibleSince);
