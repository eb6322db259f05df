import { registerDecorator } from 'class-validator';
import { parseIsoInstant } from '../kernel/iso-instant.js';

/** A real ISO 8601 date-time with a time zone (parseIsoInstant), as every instant the API takes. */
export function IsInstant(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isInstant',
      target: target.constructor,
      propertyName: String(propertyName),
      validator: {
        validate: (value: unknown) => typeof value === 'string' && parseIsoInstant(value) !== null,
        defaultMessage: () => `${String(propertyName)} must be a real ISO 8601 date-time with a time zone, e.g. 2026-11-21T12:00:00Z`,
      },
    });
}
