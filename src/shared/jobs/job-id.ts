import { createHash } from 'node:crypto';

/**
 * A job id (UUID form) derived from what the job is about: the same event for the same recipient
 * always gets the same id, so enqueueing it again (a retried dispatch) adds nothing.
 */
export function jobIdFor(...parts: string[]): string {
  const hex = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
