import type { components } from './schema.js';

export type ProblemCode = components['schemas']['ProblemCode'];
export type ProblemDocument = components['schemas']['ProblemResponse'];
export type FieldError = components['schemas']['FieldErrorResponse'];

/**
 * The code the service itself gives a bare status when it has nothing more specific: what an answer
 * that is no problem document (a proxy's 502 page) is taken for.
 */
const CODE_OF_STATUS: Partial<Record<number, ProblemCode>> = {
  400: 'VALIDATION_FAILED',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  500: 'INTERNAL_ERROR',
};

function isProblemDocument(body: unknown): body is ProblemDocument {
  const candidate = body as Partial<ProblemDocument> | null;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.code === 'string' && typeof candidate.status === 'number';
}

/** Retry-After in seconds (RFC 9110 §10.2.3: a number of seconds or an HTTP date), else undefined. */
function retryAfterSecOf(response: Response): number | undefined {
  const value = response.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/**
 * An error answer of the service (RFC 9457 problem document) as an Error: branch on `code`, show
 * `detail`, quote `requestId` when reporting it.
 */
export class DeviceCloudProblem extends Error {
  override readonly name = 'DeviceCloudProblem';
  readonly status: number;
  readonly code: ProblemCode;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly instance: string | undefined;
  /** The service's correlation id: the body's, else the X-Request-Id header. */
  readonly requestId: string | undefined;
  /** One entry per offending field (validation problems only). */
  readonly errors: FieldError[] | undefined;
  /** From the Retry-After header (429, 503): wait at least this long before trying again. */
  readonly retryAfterSec: number | undefined;

  constructor(problem: Omit<ProblemDocument, 'requestId' | 'instance'> & { requestId?: string; instance?: string }, retryAfterSec?: number) {
    super(problem.detail || problem.title);
    this.status = problem.status;
    this.code = problem.code;
    this.type = problem.type;
    this.title = problem.title;
    this.detail = problem.detail;
    this.instance = problem.instance;
    this.requestId = problem.requestId;
    this.errors = problem.errors;
    this.retryAfterSec = retryAfterSec;
  }

  /**
   * The problem of an openapi-fetch result that failed: `if (result.error) throw DeviceCloudProblem.from(result)`.
   * An answer without a problem document (from a proxy, say) gets the code of its status.
   */
  static from(result: { error?: unknown; response: Response }): DeviceCloudProblem {
    const { error, response } = result;
    const requestId = response.headers.get('x-request-id') ?? undefined;
    const retryAfterSec = retryAfterSecOf(response);
    if (isProblemDocument(error)) return new DeviceCloudProblem({ ...error, requestId: error.requestId ?? requestId }, retryAfterSec);
    const status = response.status;
    const title = response.statusText || `HTTP ${status}`;
    return new DeviceCloudProblem(
      {
        type: 'about:blank',
        title,
        status,
        detail: `The server answered ${status} ${title} without a problem document.`,
        code: CODE_OF_STATUS[status] ?? (status >= 500 ? 'SERVICE_UNAVAILABLE' : 'VALIDATION_FAILED'),
        requestId,
      },
      retryAfterSec,
    );
  }
}

type Result = { data?: unknown; error?: unknown; response: Response };
/** What a successful call gives: its body, or undefined for an answer without one (204). */
export type DataOf<R extends Result> = [NonNullable<R['data']>] extends [never] ? undefined : NonNullable<R['data']>;

/**
 * The data of a call that succeeded; a DeviceCloudProblem for one that did not:
 * `const { items } = await unwrap(api.GET('/api/v1/dashboard/devices'))`.
 */
export async function unwrap<R extends Result>(call: R | Promise<R>): Promise<DataOf<R>> {
  const result = await call;
  if (!result.response.ok) throw DeviceCloudProblem.from(result);
  return result.data as DataOf<R>;
}
