import { ValidateIf, type ValidationOptions } from 'class-validator';

/**
 * The property may be left out; when it is present every check below it applies, to null as well.
 *
 * class-validator's IsOptional skips the checks for null too, so `"csv": null` reached code that
 * expects a string (a 500 the hostile-input test found). Request properties that may be null say
 * so in the document and are checked by their own rule (the config overrides).
 */
export function Optional(options?: ValidationOptions): PropertyDecorator {
  return ValidateIf((_object: object, value: unknown) => value !== undefined, options);
}
