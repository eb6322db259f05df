/**
 * Entity tags for cheap polling (If-None-Match → 304) and safe edits (If-Match → 412).
 * Tags here are strong ("…"); If-None-Match compares weakly as RFC 9110 §13.1.2 says.
 */
export function strongTag(value: string): string {
  return `"${value}"`;
}

function listOf(header: string): string[] {
  return header.split(',').map((item) => item.trim()).filter(Boolean);
}

const opaque = (tag: string): string => (tag.startsWith('W/') ? tag.slice(2) : tag);

/** True when the client already holds `etag` (If-None-Match): answer 304. */
export function noneMatchHolds(header: string | string[] | undefined, etag: string): boolean {
  if (typeof header !== 'string' || header.length === 0 || header.length > 1024) return false;
  return listOf(header).some((tag) => tag === '*' || opaque(tag) === etag);
}

/** False when If-Match is present and names none of the current tag (strong comparison): answer 412. */
export function ifMatchHolds(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return true;
  if (typeof header !== 'string' || header.length > 1024) return false;
  return listOf(header).some((tag) => tag === '*' || (!tag.startsWith('W/') && tag === etag));
}
