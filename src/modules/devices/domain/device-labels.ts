import { ValidationFailedError, type FieldError } from '../../../shared/domain-error.js';

/** What people call a device and how they group it; the owner's, cleared when the device is released. */
export interface DeviceLabels {
  name: string | null;
  /** A set: distinct, sorted. */
  tags: string[];
}

/** A change: an absent key stays as it is; `name: null` clears the name, `tags` replaces the whole set. */
export interface DeviceLabelsPatch {
  name?: string | null;
  tags?: string[];
}

export const NAME_MAX_LENGTH = 64;
export const TAG_MAX_LENGTH = 32;
export const MAX_TAGS = 20;
export const TAG_PATTERN = /^[a-z0-9._-]{1,32}$/;

/**
 * Characters a name may not hold: controls, format characters (bidirectional overrides make a
 * name read differently from what it is), private-use and unassigned code points, and line or
 * paragraph separators. The zero-width joiner stays allowed: emoji sequences need it.
 */
const NOT_PRINTABLE = /(?!\u200d)[\p{C}\u2028\u2029]/u;

/**
 * A tag as stored: trimmed and lower-cased, then 1–32 of a–z 0–9 . _ -; null when it cannot be
 * one. The list filter reads its `tag` values through the same rule, so `Roof` finds `roof`.
 */
export function normalizeTag(raw: string): string | null {
  const tag = raw.trim().toLowerCase();
  return TAG_PATTERN.test(tag) ? tag : null;
}

/** A name as stored: NFC, trimmed, 1–64 printable characters (code points); null when it cannot be one. */
export function normalizeName(raw: string): string | null {
  const name = raw.normalize('NFC').trim();
  const length = [...name].length;
  return length >= 1 && length <= NAME_MAX_LENGTH && !NOT_PRINTABLE.test(name) ? name : null;
}

/** Strong validator for PATCH bodies: unknown keys, wrong types and values outside the rules are 400s. */
export function parseLabelsPatch(body: unknown): DeviceLabelsPatch {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationFailedError([{ field: '(root)', message: 'the body must be a JSON object' }]);
  }
  const errors: FieldError[] = [];
  const patch: DeviceLabelsPatch = {};
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue;
    if (key === 'name') {
      const name = value === null ? null : typeof value === 'string' ? normalizeName(value) : undefined;
      if (name === undefined || (value !== null && name === null)) {
        errors.push({ field: 'name', message: `name must be 1–${NAME_MAX_LENGTH} printable characters (surrounding spaces are trimmed), or null to clear it` });
      } else patch.name = name;
    } else if (key === 'tags') {
      const tags = Array.isArray(value) && value.every((tag) => typeof tag === 'string') ? value.map(normalizeTag) : null;
      const distinct = tags && !tags.includes(null) ? [...new Set(tags as string[])].sort() : null;
      if (!distinct) {
        errors.push({ field: 'tags', message: `tags must be an array of tags, each 1–${TAG_MAX_LENGTH} of a–z 0–9 . _ - (upper case is lowered, surrounding spaces trimmed)` });
      } else if (distinct.length > MAX_TAGS) {
        errors.push({ field: 'tags', message: `a device has at most ${MAX_TAGS} distinct tags` });
      } else patch.tags = distinct;
    } else {
      errors.push({ field: key.slice(0, 64), message: `${key.slice(0, 64)} is not a label (known: name, tags)` });
    }
  }
  if (errors.length > 0) throw new ValidationFailedError(errors);
  if (Object.keys(patch).length === 0) throw new ValidationFailedError([{ field: '(root)', message: 'name at least one of name, tags' }]);
  return patch;
}
