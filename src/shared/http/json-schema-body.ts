import { Injectable, type PipeTransform } from '@nestjs/common';
import { Ajv, type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import { ValidationFailedError, type FieldError } from '../domain-error.js';
import { parseIsoInstant } from '../kernel/iso-instant.js';

/** Enough to fix a request; a hostile 100,000-element body must not become a 100,000-line answer. */
const MAX_REPORTED = 20;

/**
 * Validation by a compiled JSON schema, for hot routes with large bodies where walking the body
 * with class-validator costs more than the rest of the request. Types are never coerced, unknown
 * properties are refused, numbers must be finite (1e309 parses to Infinity).
 */
const ajv = new Ajv({ allErrors: true, strict: true, strictNumbers: true, coerceTypes: false, removeAdditional: false, useDefaults: false });

/**
 * `{ anyNumber: true }`: any JSON number, Infinity included (what 1e999 parses to), for values the
 * service refuses one by one later rather than with the whole body (telemetry metric values).
 */
ajv.addKeyword({ keyword: 'anyNumber', schemaType: 'boolean', errors: false, validate: (wanted: boolean, data: unknown) => !wanted || typeof data === 'number' });

const formatMessages = new Map<string, string>();

/** Adds a format checked by a function (e.g. an ISO instant that must name a real date) and what a refusal says. */
export function addFormat(name: string, validate: (value: string) => boolean, message: string): void {
  ajv.addFormat(name, { type: 'string', validate });
  formatMessages.set(name, message);
}

/** `format: 'iso-instant'`: an ISO 8601 date-time with a zone that names a real instant (the gateways' timestamps). */
addFormat('iso-instant', (value) => parseIsoInstant(value) !== null, 'must be a real ISO 8601 date-time with a time zone, e.g. 2026-11-21T12:00:00Z');

/** The field a schema error names, in the dotted form the class-validator routes use ("records.3.ts"). */
function fieldOf(error: ErrorObject, fieldFor: (path: string[]) => string[]): string {
  const path = error.instancePath.split('/').slice(1).map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') path.push(String((error.params as { missingProperty: string }).missingProperty));
  if (error.keyword === 'additionalProperties') path.push(String((error.params as { additionalProperty: string }).additionalProperty));
  const field = fieldFor(path).join('.');
  return field === '' ? '(root)' : field;
}

function messageOf(error: ErrorObject): string {
  if (error.keyword === 'additionalProperties') return 'is not a known property';
  if (error.keyword === 'anyNumber') return 'must be number';
  if (error.keyword === 'format') return formatMessages.get(String((error.params as { format: string }).format)) ?? 'has the wrong format';
  if (error.propertyName !== undefined) return `property name ${JSON.stringify(error.propertyName.slice(0, 40))} ${error.message ?? 'is not allowed'}`;
  return error.message ?? 'is not valid';
}

/**
 * A body pipe for one schema. `fieldFor` may shorten the path an error names (e.g. report a bad
 * metric as the record's metrics field, as the documentation describes it).
 */
@Injectable()
export class JsonSchemaBody implements PipeTransform {
  private readonly validate: ValidateFunction;

  constructor(
    schema: SchemaObject,
    private readonly fieldFor: (path: string[]) => string[] = (path) => path,
  ) {
    this.validate = ajv.compile(schema);
  }

  transform(value: unknown): unknown {
    if (this.validate(value)) return value;
    const errors: FieldError[] = [];
    const seen = new Set<string>();
    for (const error of this.validate.errors ?? []) {
      const problem = { field: fieldOf(error, this.fieldFor), message: messageOf(error) };
      if (seen.has(problem.field)) continue;
      seen.add(problem.field);
      errors.push(problem);
      if (errors.length === MAX_REPORTED) break;
    }
    throw new ValidationFailedError(errors);
  }
}
