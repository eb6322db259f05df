import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, InvalidBearerTokenError, type ErrorKind, type FieldError } from './domain-error.js';
import { DatabaseUnavailableError } from './database/database-errors.js';
import type { DatabaseOutage } from './database/database-outage.js';
import { PROBLEM_TITLES, problemType } from './problem-types.js';
import { UnsupportedContentEncodingError } from './http/json-body-parser.js';
import type { RateLimitMetrics } from './rate-limit/rate-limit-metrics.js';

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: string;
  requestId: string;
  errors?: FieldError[];
}

const STATUS_OF_KIND: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  conflict: 409,
  'precondition-failed': 412,
  'too-large': 413,
  'range-not-satisfiable': 416,
  'unsupported-media-type': 415,
  unprocessable: 422,
  'rate-limited': 429,
  unavailable: 503,
};

const CODE_OF_STATUS: Record<number, string> = {
  400: 'VALIDATION_FAILED',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
};

/** Fastify's own request errors (body parsing, limits) carry a status code and an FST_ code. */
interface FastifyStyleError {
  statusCode: number;
  code?: string;
}

function isFastifyStyleError(error: unknown): error is FastifyStyleError {
  return typeof error === 'object' && error !== null && typeof (error as FastifyStyleError).statusCode === 'number';
}

interface Mapped {
  status: number;
  code: string;
  detail: string;
  errors?: FieldError[];
  retryAfterSec?: number;
}

function mapError(error: unknown): Mapped | undefined {
  if (error instanceof DomainError) {
    return {
      status: STATUS_OF_KIND[error.kind],
      code: error.code,
      detail: error.message,
      errors: error.details.errors,
      retryAfterSec: error.details.retryAfterSec,
    };
  }
  if (error instanceof HttpException && isFastifyStyleError(error.cause)) return mapError(error.cause);
  if (error instanceof HttpException) {
    const status = error.getStatus();
    if (status === 503) return { status, code: 'SERVICE_UNAVAILABLE', detail: 'Not ready to serve requests. Retry later.', retryAfterSec: 5 };
    if (status >= 500) return undefined;
    const code = CODE_OF_STATUS[status] ?? 'VALIDATION_FAILED';
    return { status, code, detail: status === 404 ? 'No such route.' : PROBLEM_TITLES[code] + '.' };
  }
  if (isFastifyStyleError(error) && error.statusCode >= 400 && error.statusCode < 500) {
    const status = error.statusCode;
    if (status === 413) return { status, code: 'PAYLOAD_TOO_LARGE', detail: 'The request body exceeds the size limit of this route.' };
    if (status === 415) return { status, code: 'UNSUPPORTED_MEDIA_TYPE', detail: 'Send the body as application/json.' };
    if (status === 400) return { status, code: 'MALFORMED_BODY', detail: 'The request body could not be parsed as JSON.' };
    return { status, code: CODE_OF_STATUS[status] ?? 'VALIDATION_FAILED', detail: 'The request was rejected.' };
  }
  return undefined;
}

/**
 * Writes every error as an RFC 9457 problem document. Unknown errors become a generic 500 whose
 * only detail is the request id; the error itself goes to the log, never to the client.
 */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('ProblemDetails');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly outage: DatabaseOutage,
    private readonly refusals: RateLimitMetrics,
  ) {}

  catch(error: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const requestId = String(request.id);
    const mapped = mapError(error);
    if (!mapped) {
      this.logger.error({ err: error, requestId }, 'Unhandled error');
    } else if (error instanceof DatabaseUnavailableError) {
      // Logged once per outage, with the driver's code only (its message or the statement may hold data).
      this.outage.refused(error.unavailableCause, error.reason);
    }
    const { status, code, detail, errors, retryAfterSec } = mapped ?? {
      status: 500,
      code: 'INTERNAL_ERROR',
      detail: `An unexpected error occurred. Quote request id ${requestId} when reporting it.`,
    };
    const body: ProblemDocument = {
      type: problemType(code),
      title: PROBLEM_TITLES[code] ?? code,
      status,
      detail,
      instance: (request.url ?? '').split('?')[0],
      code,
      requestId,
      ...(errors ? { errors } : {}),
    };
    // RFC 9110: a 401 names the scheme that would succeed; RFC 6750 §3: and says when the token sent was refused.
    if (status === 401) reply.header('WWW-Authenticate', error instanceof InvalidBearerTokenError ? 'Bearer realm="device-cloud", error="invalid_token"' : 'Bearer realm="device-cloud"');
    if (error instanceof UnsupportedContentEncodingError) reply.header('Accept-Encoding', 'gzip');
    if (status === 429) this.refusals.refused((error instanceof DomainError ? error.details.limiter : undefined) ?? 'other');
    if (retryAfterSec !== undefined) reply.header('Retry-After', String(Math.max(1, Math.ceil(retryAfterSec))));
    reply.header('Content-Type', 'application/problem+json; charset=utf-8');
    this.adapterHost.httpAdapter.reply(reply, body, status);
  }
}
