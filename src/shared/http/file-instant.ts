/** An instant in a file name: ISO 8601 basic format, without the colons file systems refuse ("20261121T120000Z"). */
export const fileInstant = (instant: Date): string => instant.toISOString().replace(/[-:]/g, '').replace(/\.000Z$/, 'Z');
