import { DECORATORS } from '@nestjs/swagger';
import { PROBLEM_TITLES, problemType, type ProblemCode } from '../problem-types.js';

export type ProblemStatus = 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 416 | 422 | 429 | 503;

/** The problem codes an operation can answer, per status. */
export type ProblemCodes = Partial<Record<ProblemStatus, readonly ProblemCode[]>>;

/** What any operation that reads a JSON body can answer before its own checks run (parser, limits, validation pipe). */
export const JSON_BODY_PROBLEMS: ProblemCodes = { 400: ['VALIDATION_FAILED', 'MALFORMED_BODY'], 413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE'] };

const DESCRIPTIONS: Record<ProblemStatus, string> = {
  400: 'The request is not valid; `errors` names each field at fault.',
  401: 'Missing, invalid, expired or revoked credentials.',
  403: 'Authenticated but not allowed.',
  404: 'Not found, or not visible to you.',
  409: 'Conflicts with the current state.',
  412: 'If-Match names a version that is no longer current: read it again.',
  413: 'The body is larger than this operation accepts.',
  415: 'The body is not JSON.',
  416: 'The range starts at or beyond the end; Content-Range: bytes */<size> gives the size.',
  422: 'Well-formed, but what it names cannot be used for this.',
  429: 'Too many requests: send it again after Retry-After seconds.',
  503: 'Temporarily unavailable (the database cannot be reached, or this instance is stopping): send it again after Retry-After seconds.',
};

const RETRY_AFTER = {
  'Retry-After': { required: true, description: 'Seconds to wait before sending the request again.', schema: { type: 'integer', minimum: 1, example: 5 } },
};

const EXAMPLES = '#/components/examples/';
const exampleName = (status: ProblemStatus, code: ProblemCode) => `problem-${status}-${code}`;

/**
 * The examples the document's problem responses refer to (components.examples), one per status
 * and code: an operation lists its codes, and each code's example is written once.
 */
export function problemExamples(document: unknown): Record<string, { summary: string; value: object }> {
  const names = new Set<string>();
  const collect = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(collect);
    if (node === null || typeof node !== 'object') return;
    const ref = (node as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith(`${EXAMPLES}problem-`)) names.add(ref.slice(EXAMPLES.length));
    Object.values(node).forEach(collect);
  };
  collect(document);
  return Object.fromEntries(
    [...names].sort().map((name) => {
      const [, status, code] = /^problem-(\d{3})-(\w+)$/.exec(name)!;
      const title = PROBLEM_TITLES[code];
      const value = { type: problemType(code), title, status: Number(status), detail: `${title}.`, instance: '/api/v1/dashboard/devices/gw-0001', code, requestId: '9b2f3c1e-6d3a-4c47-9a34-0f1d1e2b7c55' };
      return [name, { summary: title, value }];
    }),
  );
}

/**
 * The response of one error status: a problem document whose `code` is one of `codes`, an
 * example per code, and Retry-After where the service sends it (429, 503).
 */
export function problemResponse(status: ProblemStatus, codes: readonly ProblemCode[], description = DESCRIPTIONS[status]) {
  return {
    description,
    ...(status === 429 || status === 503 ? { headers: RETRY_AFTER } : {}),
    content: {
      'application/problem+json': {
        schema: {
          allOf: [
            { $ref: '#/components/schemas/ProblemResponse' },
            { type: 'object', required: ['status', 'code'], properties: { status: { type: 'integer', enum: [status] }, code: { type: 'string', enum: [...codes] } } },
          ],
        },
        examples: Object.fromEntries(codes.map((code) => [code, { $ref: `${EXAMPLES}${exampleName(status, code)}` }])),
      },
    },
  };
}

const PROBLEMS = 'device-cloud:problem-codes';
const PROBLEM_DESCRIPTIONS = 'device-cloud:problem-descriptions';

/**
 * Adds codes to an operation's error responses. Several declarations on one operation (the auth
 * decorator's 401, the operation's own) merge per status, so each status lists every code it
 * can carry, whatever the order the decorators run in.
 */
function declareProblems(codes: ProblemCodes, descriptions: Partial<Record<ProblemStatus, string>> = {}): MethodDecorator {
  return (_target, key, descriptor) => {
    if (!descriptor) throw new Error(`@ApiProblems documents operations, not classes (${String(key)})`);
    const method = descriptor.value as object;
    const declared: Partial<Record<ProblemStatus, ProblemCode[]>> = { ...(Reflect.getMetadata(PROBLEMS, method) ?? {}) };
    for (const [status, list] of Object.entries(codes) as [`${ProblemStatus}`, readonly ProblemCode[]][]) {
      declared[Number(status) as ProblemStatus] = [...new Set([...(declared[Number(status) as ProblemStatus] ?? []), ...list])];
    }
    const described = { ...(Reflect.getMetadata(PROBLEM_DESCRIPTIONS, method) ?? {}), ...descriptions } as Partial<Record<ProblemStatus, string>>;
    Reflect.defineMetadata(PROBLEMS, declared, method);
    Reflect.defineMetadata(PROBLEM_DESCRIPTIONS, described, method);
    const responses: Record<string, unknown> = { ...(Reflect.getMetadata(DECORATORS.API_RESPONSE, method) ?? {}) };
    for (const [status, list] of Object.entries(declared) as [`${ProblemStatus}`, ProblemCode[]][]) {
      const code = Number(status) as ProblemStatus;
      responses[status] = problemResponse(code, list, described[code]);
    }
    Reflect.defineMetadata(DECORATORS.API_RESPONSE, responses, method);
    return descriptor;
  };
}

/**
 * Documents the problem codes an operation can answer, per status:
 * `@ApiProblems(JSON_BODY_PROBLEMS, { 404: ['NOT_FOUND'], 409: ['DEVICE_ALREADY_CLAIMED'] })`.
 * 401 (and 403 for admins) come with the auth decorators, 503 SERVICE_UNAVAILABLE with the
 * document (every operation needs the database).
 */
export function ApiProblems(...declarations: ProblemCodes[]): MethodDecorator {
  const merged: Partial<Record<ProblemStatus, ProblemCode[]>> = {};
  for (const declaration of declarations) {
    for (const [status, codes] of Object.entries(declaration) as [`${ProblemStatus}`, readonly ProblemCode[]][]) {
      const key = Number(status) as ProblemStatus;
      merged[key] = [...(merged[key] ?? []), ...codes];
    }
  }
  return declareProblems(merged);
}

/** A 403 or another status whose description says more than the generic one. */
export function ApiProblemsDescribed(status: ProblemStatus, codes: readonly ProblemCode[], description: string): MethodDecorator {
  return declareProblems({ [status]: codes }, { [status]: description });
}

/**
 * The 503 of an operation that checks a credential under a failure limit: besides the database,
 * the shared rate-limit store (REDIS_URL) must answer, or the check is refused (fail closed).
 */
export function ApiCredentialCheckUnavailable(): MethodDecorator {
  return ApiProblemsDescribed(
    503,
    ['SERVICE_UNAVAILABLE'],
    'Temporarily unavailable: the database or the rate-limit store cannot be reached: send it again after Retry-After seconds.',
  );
}
