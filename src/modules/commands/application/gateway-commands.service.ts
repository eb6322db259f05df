import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Mirror } from '../../../shared/database/mirror.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { strongTag } from '../../../shared/http/etag.js';
import { EventLog } from '../../events/index.js';
import { CommandStore } from '../domain/command.store.js';
import { CommandFinishedError, CommandNotFoundError } from '../domain/commands.errors.js';
import { commandSequenceOf, isFinal, MAX_OUTPUT_BYTES, PENDING_STATES, stateAfter, type DeviceCommand, type PendingCommand, type ResultStatus } from '../domain/device-command.js';
import { recordCommandEvent } from './command-events.js';
import { CommandWaiters } from './command-waiters.js';

export interface CommandsPoll {
  commands: PendingCommand[];
  /** Names the set of pending commands: unchanged while no command comes or goes. */
  etag: string;
}

export const commandsTag = (commands: readonly PendingCommand[]): string => strongTag(`commands-${commands.map((command) => command.commandId).join('.')}`);

/**
 * Commands as a gateway fetches and answers them. The pending commands of a device are kept in
 * memory until the change feed says they changed, so an idle poll (and its 304) costs no query;
 * a long poll waits for that same announcement, from whichever instance the command was sent on.
 */
@Injectable()
export class GatewayCommandsService {
  private readonly mirror: Mirror<PendingCommand[]>;

  constructor(
    private readonly store: CommandStore,
    private readonly events: EventLog,
    private readonly waiters: CommandWaiters,
    private readonly clock: Clock,
    private readonly feed: ChangeFeed,
  ) {
    this.mirror = new Mirror(feed, 'device_command', (deviceId) => this.store.pending(deviceId, this.clock.now()));
  }

  /** The device's pending commands, oldest first, without those whose time ran out. */
  async poll(deviceId: string): Promise<CommandsPoll> {
    const now = this.clock.now().getTime();
    const commands = (await this.mirror.get(deviceId)).filter((command) => command.expiresAt.getTime() > now);
    return { commands, etag: commandsTag(commands) };
  }

  /**
   * As poll, but when there is nothing new for the gateway (no command, or the set it holds by
   * `heldEtag`) waits up to `waitMs` for a change first.
   */
  async longPoll(deviceId: string, waitMs: number, heldEtag: (etag: string) => boolean, gone?: AbortSignal): Promise<CommandsPoll> {
    const deadline = performance.now() + waitMs;
    let current = await this.pollSettled(deviceId);
    if (waitMs <= 0 || (current.commands.length > 0 && !heldEtag(current.etag))) return current;
    for (;;) {
      const end = await this.waiters.wait(deviceId, Math.max(0, deadline - performance.now()), gone);
      current = await this.pollSettled(deviceId);
      // An announcement of a change the gateway already holds (the echo of this instance's own
      // change, arriving after it; a state the gateway does not see) wakes it for nothing: it
      // waits on for the rest of its time rather than poll again at once.
      if (end !== 'changed' || !heldEtag(current.etag) || deadline - performance.now() <= 0) return current;
    }
  }

  /**
   * As poll, read again when a change was announced meanwhile (the feed's epoch moved), as what
   * was read may not hold it: a wait that starts from the answer misses no announcement.
   */
  private async pollSettled(deviceId: string): Promise<CommandsPoll> {
    let current: CommandsPoll;
    let epoch: number;
    let reads = 0;
    do {
      epoch = this.feed.epoch;
      current = await this.poll(deviceId);
    } while (this.feed.epoch !== epoch && ++reads < 3);
    return current;
  }

  /** The answer carrying `commands` goes out: each counts one more delivery, and those queued until now become delivered. */
  async delivered(deviceId: string, commands: readonly PendingCommand[]): Promise<void> {
    if (commands.length === 0) return;
    const at = this.clock.now();
    await this.store.markDelivered(deviceId, commands.map((command) => commandSequenceOf(command.commandId)!), at, async (tx, delivered) => {
      for (const { command, ownerId } of delivered) await recordCommandEvent(this.events, tx, command, ownerId, at);
    });
  }

  /**
   * The gateway's result. Idempotent: the same result again answers the command as it is; a
   * different final result for a command that ended already (expired, cancelled, another result)
   * is a 409 that tells the gateway to drop it.
   */
  async report(deviceId: string, commandId: string, status: ResultStatus, output: string | null): Promise<DeviceCommand> {
    if (output !== null && Buffer.byteLength(output, 'utf8') > MAX_OUTPUT_BYTES) throw new ValidationFailedError([{ field: 'output', message: `output must be at most ${MAX_OUTPUT_BYTES} bytes` }]);
    const sequence = commandSequenceOf(commandId);
    if (sequence === null) throw new CommandNotFoundError();
    const at = this.clock.now();
    const to = stateAfter(status);
    if (to === null) return this.accepted(deviceId, sequence, at);
    const outcome = await this.store.transition(deviceId, sequence, { from: PENDING_STATES, to, at, output }, async (tx, { command, ownerId }) => {
      await recordCommandEvent(this.events, tx, command, ownerId, at);
    });
    if (!outcome) throw new CommandNotFoundError();
    if (!outcome.changed && outcome.command.state !== to) throw new CommandFinishedError(outcome.command.state);
    return outcome.command;
  }

  private async accepted(deviceId: string, sequence: string, at: Date): Promise<DeviceCommand> {
    const command = await this.store.find(deviceId, sequence);
    if (!command) throw new CommandNotFoundError();
    if (isFinal(command.state)) return command;
    // The gateway has it, whatever the poll's answer recorded: a lost answer's delivery counts.
    if (command.state === 'queued') await this.delivered(deviceId, [command]);
    return (await this.store.markAccepted(deviceId, sequence, at)) ?? command;
  }
}
