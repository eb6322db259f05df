import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { JobQueue, type QueueSpec } from '../../../shared/jobs/job-queue.js';
import { EventLog } from '../../events/index.js';
import { CommandStore } from '../domain/command.store.js';
import { commandSequenceOf, PENDING_STATES } from '../domain/device-command.js';
import { recordCommandEvent } from './command-events.js';

export const EXPIRE_COMMAND_QUEUE = 'commands.expire';

/** The command an expiry job is about. A command whose device is gone is gone with it: the job finds nothing. */
export interface ExpiryJob {
  deviceId: string;
  commandId: string;
}

const QUEUE: QueueSpec = { name: EXPIRE_COMMAND_QUEUE, retry: { delaySec: 10, delayMaxSec: 300, limit: 20 }, expireInSec: 60 };

/**
 * A command's expiry: a job queued with the command, due when its ttl ends. A command still queued
 * or delivered then (never fetched, or fetched and never answered) becomes `expired`, with its
 * event; one that ended meanwhile is left alone. Should the job run early by the service's clock
 * (clocks of database and service differ), it is queued again for the rest of the time.
 */
@Injectable()
export class ExpireCommand implements OnModuleInit {
  constructor(
    private readonly store: CommandStore,
    private readonly events: EventLog,
    private readonly jobs: JobQueue,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.jobs.define<ExpiryJob>(QUEUE, (data) => this.run(data));
  }

  async run({ deviceId, commandId }: ExpiryJob): Promise<void> {
    const sequence = commandSequenceOf(commandId);
    if (sequence === null) return;
    const now = this.clock.now();
    const outcome = await this.store.transition(deviceId, sequence, { from: PENDING_STATES, to: 'expired', at: now, expiredBy: now }, async (tx, { command, ownerId }) => {
      await recordCommandEvent(this.events, tx, command, ownerId, now);
    });
    if (outcome && !outcome.changed && PENDING_STATES.includes(outcome.command.state)) {
      const startAfterSec = Math.max(1, Math.ceil((outcome.command.expiresAt.getTime() - now.getTime()) / 1000));
      await this.jobs.send(EXPIRE_COMMAND_QUEUE, { deviceId, commandId } satisfies ExpiryJob, { startAfterSec });
    }
  }
}
