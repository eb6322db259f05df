import { ValidationFailedError, type FieldError } from '../../../shared/domain-error.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';

/** Entries one import may carry, JSON and CSV together. */
export const MAX_ALLOWLIST_IMPORT = 5000;

export interface AllowlistEntry {
  deviceId: string;
  hardwareId: string;
}

/** The entries of one import, JSON and CSV together, within the per-import bound. */
export function combineImport(entries: AllowlistEntry[], csv: string | undefined): AllowlistEntry[] {
  const all = [...entries, ...(csv === undefined ? [] : parseAllowlistCsv(csv))];
  if (all.length > MAX_ALLOWLIST_IMPORT) throw new ValidationFailedError([{ field: 'entries', message: `at most ${MAX_ALLOWLIST_IMPORT} devices per import` }]);
  return all;
}

/** Reads `deviceId,hardwareId` lines (header first); every bad line is named in one error. */
export function parseAllowlistCsv(text: string): AllowlistEntry[] {
  const lines = text.split(/\r?\n/).map((line) => line.trim());
  const [header, ...rows] = lines;
  const problems: FieldError[] = [];
  if (header?.replaceAll(' ', '').toLowerCase() !== 'deviceid,hardwareid') problems.push({ field: 'csv', message: 'the first line must be the header deviceId,hardwareId' });
  const entries: AllowlistEntry[] = [];
  rows.forEach((line, index) => {
    if (line === '') return;
    const [deviceId, hardwareId, ...extra] = line.split(',').map((cell) => cell.trim());
    if (extra.length > 0 || !DEVICE_ID_PATTERN.test(deviceId ?? '') || !hardwareId || hardwareId.length > 128) {
      problems.push({ field: `csv.line${index + 2}`, message: 'expected deviceId (1–64 of A–Z a–z 0–9 . _ : -) and hardwareId (1–128 characters)' });
      return;
    }
    entries.push({ deviceId, hardwareId });
  });
  if (entries.length > MAX_ALLOWLIST_IMPORT) problems.push({ field: 'csv', message: `at most ${MAX_ALLOWLIST_IMPORT} devices per import` });
  if (problems.length > 0) throw new ValidationFailedError(problems.slice(0, 50));
  return entries;
}
