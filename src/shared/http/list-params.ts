import { Param, ParseUUIDPipe } from '@nestjs/common';
import { ValidationFailedError } from '../domain-error.js';

/** A comma-separated list of allowed values (`?type=a,b`); null when absent, a 400 naming `field` when any is unknown. */
export function parseList<T extends string>(raw: string | undefined, allowed: readonly T[], field: string): T[] | null {
  if (raw === undefined) return null;
  const values = raw.split(',').map((value) => value.trim()).filter(Boolean);
  if (values.length === 0 || values.some((value) => !(allowed as readonly string[]).includes(value))) {
    throw new ValidationFailedError([{ field, message: `${field} must be a comma-separated list of ${allowed.join(', ')}` }]);
  }
  return values as T[];
}

/** A path parameter that must be a UUID; anything else is a 400 naming it. */
export function UuidParam(name: string, what: string): ParameterDecorator {
  return Param(name, new ParseUUIDPipe({ exceptionFactory: () => new ValidationFailedError([{ field: name, message: `${name} must be ${what} (UUID)` }]) }));
}
