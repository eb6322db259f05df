import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { ValidationFailedError, type FieldError } from './domain-error.js';

const MAX_DEPTH = 32;
/**
 * Above every array a request may hold (allowlist imports: 5,000). A longer one is refused before
 * class-transformer builds an object per element and class-validator reports each one: 100,000
 * elements took seconds and answered with 100,000 errors.
 */
const MAX_ARRAY_LENGTH = 10_000;

function flatten(errors: ValidationError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

/**
 * What is wrong with a string or property name as text, if anything. JSON may escape half of a
 * surrogate pair (\ud800) on its own: that is no Unicode text, and some validators (IsEmail) throw
 * on it instead of answering.
 */
function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  if (!text.isWellFormed()) return 'must be Unicode text (an unpaired surrogate is not)';
  return undefined;
}

/** Finds the first string or key that is not plain text (textProblem), a structure nested too deep, or an array too long. */
function findForbidden(value: unknown, path: string, depth = 0): FieldError | undefined {
  if (depth > MAX_DEPTH) return { field: path || '(root)', message: 'is nested too deeply' };
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem ? { field: path || '(root)', message: problem } : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value) && value.length > MAX_ARRAY_LENGTH) return { field: path || '(root)', message: `must not contain more than ${MAX_ARRAY_LENGTH} elements` };
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    const problem = textProblem(key);
    if (problem) return { field: path || '(root)', message: `property names ${problem}` };
    const found = findForbidden(child, childPath, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * The one validation pipe: whitelists DTO properties (unknown ones are a 400), never coerces types
 * implicitly, and rejects NUL characters and unpaired surrogates anywhere in body, query or path, and
 * arrays too long to validate.
 */
@Injectable()
export class AppValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      transform: true,
      transformOptions: { enableImplicitConversion: false },
      validationError: { target: false, value: false },
      exceptionFactory: (errors) => new ValidationFailedError(flatten(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const forbidden = findForbidden(value, metadata.type === 'body' ? '' : (metadata.data ?? metadata.type));
    if (forbidden) throw new ValidationFailedError([forbidden]);
    if (metadata.type === 'body' && (value === null || typeof value !== 'object' || Array.isArray(value)) && metadata.metatype && metadata.metatype !== Object) {
      throw new ValidationFailedError([{ field: '(root)', message: 'the body must be a JSON object' }]);
    }
    return super.transform(value, metadata);
  }
}
