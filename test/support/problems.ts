import type { components } from '@device-cloud/client';

export type Problem = components['schemas']['ProblemResponse'];

/**
 * Asserts an RFC 9457 problem answer: status, media type, every required member, no stack, and
 * the X-Request-Id header matching the body. Returns the document for further checks.
 */
export function expectProblem(result: { response: Response; error?: unknown }, status: number, code?: string): Problem {
  const { response } = result;
  const problem = result.error as Problem;
  expect({ status: response.status, code: problem?.code }).toEqual({ status, code: code ?? problem?.code });
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json(;|$)/);
  expect(problem).toEqual(
    expect.objectContaining({
      type: expect.stringMatching(/\S/),
      title: expect.stringMatching(/\S/),
      status,
      detail: expect.stringMatching(/\S/),
      instance: expect.stringMatching(/^\//),
      code: expect.stringMatching(/^[A-Z][A-Z_]*$/),
      requestId: expect.stringMatching(/\S/),
    }),
  );
  expect(problem).not.toHaveProperty('stack');
  expect(response.headers.get('x-request-id')).toBe(problem.requestId);
  return problem;
}

/** The field names a VALIDATION_FAILED (or similar) problem reports. */
export function fieldsOf(problem: Problem): string[] {
  return (problem.errors ?? []).map((error) => error.field);
}
