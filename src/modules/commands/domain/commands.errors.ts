import { DomainError } from '../../../shared/domain-error.js';
import { MAX_QUEUED_PER_DEVICE, type CommandState } from './device-command.js';

export class CommandNotFoundError extends DomainError {
  constructor() {
    super('NOT_FOUND', 'not-found', 'No command of this device has this id.');
  }
}

export class TooManyCommandsError extends DomainError {
  constructor() {
    super('TOO_MANY_COMMANDS', 'rate-limited', `At most ${MAX_QUEUED_PER_DEVICE} commands may wait for one device. Cancel one, or wait until the gateway has fetched them.`, { retryAfterSec: 60, limiter: 'commands-per-device' });
  }
}

export class CommandNotQueuedError extends DomainError {
  constructor(state: CommandState) {
    super('COMMAND_NOT_QUEUED', 'conflict', `The command is ${state}: only a queued command can be cancelled.`);
  }
}

export class CommandFinishedError extends DomainError {
  constructor(state: CommandState) {
    super('COMMAND_FINISHED', 'conflict', `The command is ${state} already: drop it.`);
  }
}
