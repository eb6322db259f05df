/** Strings in code point order, the same whatever collation a database or a locale has (metric names, CSV columns). */
export const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
