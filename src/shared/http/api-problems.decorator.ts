import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (problem document; `errors` names each field).',
  401: 'Missing, invalid or revoked credentials.',
  403: 'Authenticated but not allowed.',
  404: 'Not found.',
  409: 'Conflicts with the current state.',
  412: 'If-Match names a version that is no longer current (problem PRECONDITION_FAILED).',
  413: 'Body too large.',
  415: 'Unsupported content type.',
  429: 'Too many attempts or requests (problem RATE_LIMITED); see Retry-After.',
  503: 'Temporarily unavailable; see Retry-After.',
};

/** Documents the error statuses an operation can answer, each with the problem-details schema. */
export function ApiProblems(...statuses: number[]): MethodDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({ status, description: DESCRIPTIONS[status] ?? 'Error.', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemResponse' } } } }),
    ),
  );
}

/**
 * The 503 of an operation that checks a credential under a failure limit: besides the database,
 * the shared rate-limit store (REDIS_URL) must answer, or the check is refused (fail closed).
 */
export function ApiCredentialCheckUnavailable(): MethodDecorator {
  return ApiResponse({
    status: 503,
    description: 'Temporarily unavailable: the database or the rate-limit store cannot be reached (problem SERVICE_UNAVAILABLE); see Retry-After.',
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemResponse' } } },
  });
}
