import { ValidationFailedError, type FieldError } from '../../../shared/domain-error.js';

/** Severities, most severe first (ESP-IDF's, without `none`). */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug', 'verbose'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const MAX_MESSAGE_BYTES = 512;
export const MAX_TAG_LENGTH = 32;
export const MAX_LINES_PER_BATCH = 2000;
export const MAX_BATCH_BYTES = 256 * 1024;
/** Gateway clocks drift; a little ahead of ours is tolerated, more is a broken clock. */
export const MAX_CLOCK_AHEAD_MS = 5 * 60 * 1000;

export interface LogLine {
  ts: Date;
  level: LogLevel;
  tag: string | null;
  message: string;
}

export interface StoredLogLine extends LogLine {
  /** With `ts`, what tells this line from another of the same instant: the page cursor's key. */
  lineHash: string;
}

export type LogRejection = 'TS_IN_FUTURE' | 'TS_BEYOND_RETENTION';

/** What a line costs against the daily quota: the bytes of its message and tag (UTF-8). */
export const lineBytes = (line: Pick<LogLine, 'message' | 'tag'>): number => Buffer.byteLength(line.message, 'utf8') + (line.tag === null ? 0 : Buffer.byteLength(line.tag, 'utf8'));

/** A message over MAX_MESSAGE_BYTES refuses the whole batch (400 naming each): truncating a line silently would lie. */
export function checkMessages(lines: readonly Pick<LogLine, 'message'>[]): void {
  const errors: FieldError[] = [];
  lines.forEach((line, index) => {
    if (Buffer.byteLength(line.message, 'utf8') > MAX_MESSAGE_BYTES) errors.push({ field: `lines.${index}.message`, message: `message must be at most ${MAX_MESSAGE_BYTES} bytes of UTF-8` });
  });
  if (errors.length > 0) throw new ValidationFailedError(errors.slice(0, 20));
}

/** Lines dated too far ahead of `now`, or before retention (their day's partition is gone), are refused one by one. */
export function admitLines<T extends Pick<LogLine, 'ts'>>(lines: readonly T[], now: Date, retentionDays: number): { admitted: T[]; rejected: Array<{ index: number; code: LogRejection }> } {
  const latest = now.getTime() + MAX_CLOCK_AHEAD_MS;
  const earliest = now.getTime() - retentionDays * 86_400_000;
  const admitted: T[] = [];
  const rejected: Array<{ index: number; code: LogRejection }> = [];
  lines.forEach((line, index) => {
    const at = line.ts.getTime();
    if (at > latest) rejected.push({ index, code: 'TS_IN_FUTURE' });
    else if (at < earliest) rejected.push({ index, code: 'TS_BEYOND_RETENTION' });
    else admitted.push(line);
  });
  return { admitted, rejected };
}

/** `level` and everything more severe: what a filter on `warn` shows. */
export const levelsFrom = (level: LogLevel): LogLevel[] => LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(level) + 1);

/** The UTC day an instant falls on, as the quota counts days (YYYY-MM-DD). */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

/** Seconds from `at` to the next UTC midnight, when a spent quota is new again. */
export function secondsToNextUtcDay(at: Date): number {
  const next = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - at.getTime()) / 1000));
}
