import { Transform } from 'class-transformer';

const DECIMAL_INTEGER = /^-?\d+$/;

/**
 * A query parameter the OpenAPI document calls an integer, read as one: decimal digits with an
 * optional minus. Anything else — `0x10`, `1e1`, `0.1e1`, ` 5` — stays the string it was and fails
 * @IsInt(), a 400 naming the parameter, where Number() would read `0x10` as 16 (and a long poll
 * asked for `waitSec=0x10` would hold for 16 s).
 */
export const QueryInt = () => Transform(({ value }: { value: unknown }) => (typeof value === 'string' && DECIMAL_INTEGER.test(value) ? Number(value) : value));
