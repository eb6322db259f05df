import { ValidationFailedError, type FieldError } from '../../../shared/domain-error.js';

/** What a gateway can be asked to do. `custom` carries a firmware-specific action by name. */
export const COMMAND_TYPES = ['reboot', 'ping', 'upload-now', 'set-log-level', 'collect-logs', 'custom'] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

/** queued → delivered → succeeded | failed | rejected; queued or delivered → expired; queued → cancelled. */
export const COMMAND_STATES = ['queued', 'delivered', 'succeeded', 'failed', 'rejected', 'expired', 'cancelled'] as const;
export type CommandState = (typeof COMMAND_STATES)[number];

/** States a command still waits for its gateway in: what its polls answer. */
export const PENDING_STATES: readonly CommandState[] = ['queued', 'delivered'];

/** What a gateway reports: `accepted` (working on it) changes no state; the others end the command. */
export const RESULT_STATUSES = ['accepted', 'succeeded', 'failed', 'rejected'] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];

/** ESP-IDF's log levels (esp_log_level_t), as set-log-level names them. */
export const LOG_LEVELS = ['none', 'error', 'warn', 'info', 'debug', 'verbose'] as const;

export const DEFAULT_TTL_SEC = 3600;
export const MAX_TTL_SEC = 7 * 24 * 3600;
/** Commands waiting for one device at most: beyond, a new one is a 429 until the gateway catches up or some are cancelled. */
export const MAX_QUEUED_PER_DEVICE = 20;
export const MAX_CUSTOM_PAYLOAD_BYTES = 1024;
export const MAX_OUTPUT_BYTES = 4096;
/** collect-logs looks back at most this far: the retention of a gateway's own buffer is shorter anyway. */
export const MAX_COLLECT_LOGS_SINCE_SEC = 7 * 24 * 3600;
const CUSTOM_NAME = /^[A-Za-z0-9._-]{1,64}$/;

export interface DeviceCommand {
  /** `cmd_<n>`: unique, increasing in the order commands were sent. */
  commandId: string;
  deviceId: string;
  type: CommandType;
  params: Record<string, unknown>;
  state: CommandState;
  createdAt: Date;
  expiresAt: Date;
  deliveredAt: Date | null;
  /** How many poll answers carried it: more than one when the gateway missed an answer (at-least-once delivery). */
  deliveries: number;
  acceptedAt: Date | null;
  finishedAt: Date | null;
  output: string | null;
}

/** What a gateway's poll hands it of a command. */
export type PendingCommand = Pick<DeviceCommand, 'commandId' | 'type' | 'params' | 'createdAt' | 'expiresAt'>;

export const commandIdOf = (sequence: string): string => `cmd_${sequence}`;

/** The sequence inside a command id, or null when the text is not one. */
export function commandSequenceOf(commandId: string): string | null {
  const match = /^cmd_([1-9][0-9]{0,18})$/.exec(commandId);
  return match && BigInt(match[1]) <= 9_223_372_036_854_775_807n ? match[1] : null;
}

export const isFinal = (state: CommandState): boolean => !PENDING_STATES.includes(state);

/**
 * The parameters of a command of `type`, checked and reduced to what the type takes: unknown keys,
 * missing or out-of-range values are a 400 naming each field, and nothing is queued.
 */
export function parseCommandParams(type: CommandType, params: unknown): Record<string, unknown> {
  const given = params ?? {};
  if (typeof given !== 'object' || Array.isArray(given)) throw new ValidationFailedError([{ field: 'params', message: 'params must be an object' }]);
  const values = given as Record<string, unknown>;
  const errors: FieldError[] = [];
  const allowed = ALLOWED_KEYS[type];
  for (const key of Object.keys(values)) if (!allowed.includes(key)) errors.push({ field: `params.${key}`, message: `${type} takes no parameter ${key}` });
  const parsed: Record<string, unknown> = {};
  if (type === 'set-log-level') {
    if (!LOG_LEVELS.includes(values.level as never)) errors.push({ field: 'params.level', message: `level must be one of ${LOG_LEVELS.join(', ')}` });
    else parsed.level = values.level;
  } else if (type === 'collect-logs') {
    const since = values.sinceSec;
    if (!Number.isInteger(since) || (since as number) < 1 || (since as number) > MAX_COLLECT_LOGS_SINCE_SEC) errors.push({ field: 'params.sinceSec', message: `sinceSec must be an integer from 1 to ${MAX_COLLECT_LOGS_SINCE_SEC}` });
    else parsed.sinceSec = since;
  } else if (type === 'custom') {
    if (typeof values.name !== 'string' || !CUSTOM_NAME.test(values.name)) errors.push({ field: 'params.name', message: 'name must be 1–64 of A–Z a–z 0–9 . _ -' });
    else parsed.name = values.name;
    if (values.payload !== undefined) {
      if (Buffer.byteLength(JSON.stringify(values.payload), 'utf8') > MAX_CUSTOM_PAYLOAD_BYTES) errors.push({ field: 'params.payload', message: `payload must be at most ${MAX_CUSTOM_PAYLOAD_BYTES} bytes of JSON` });
      else parsed.payload = values.payload;
    }
  }
  if (errors.length > 0) throw new ValidationFailedError(errors);
  return parsed;
}

const ALLOWED_KEYS: Record<CommandType, readonly string[]> = {
  reboot: [],
  ping: [],
  'upload-now': [],
  'set-log-level': ['level'],
  'collect-logs': ['sinceSec'],
  custom: ['name', 'payload'],
};

/** The state a result moves a command to; null for `accepted`, which only notes that the gateway started. */
export const stateAfter = (status: ResultStatus): CommandState | null => (status === 'accepted' ? null : status);
