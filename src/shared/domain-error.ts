export type ErrorKind =
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not-found'
  | 'conflict'
  | 'precondition-failed'
  | 'too-large'
  | 'range-not-satisfiable'
  | 'unsupported-media-type'
  | 'unprocessable'
  | 'rate-limited'
  | 'unavailable';

export interface FieldError {
  field: string;
  message: string;
}

/**
 * A broken rule with a stable machine-readable code. Services throw these; the ProblemDetailsFilter
 * turns them into RFC 9457 documents. HTTP stays out of the domain.
 */
export class DomainError extends Error {
  constructor(
    readonly code: string,
    readonly kind: ErrorKind,
    message: string,
    /** `limiter`: which limit refused (a rate-limited error), for the metrics; never shown to the client. */
    readonly details: { errors?: FieldError[]; retryAfterSec?: number; limiter?: string } = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationFailedError extends DomainError {
  constructor(errors: FieldError[]) {
    super('VALIDATION_FAILED', 'invalid', 'The request is not valid.', { errors });
  }
}

/** `limiter` names the limit that refused (the first part of its bucket keys: `claim`, `ingest`, …). */
export class RateLimitedError extends DomainError {
  constructor(limiter: string, retryAfterSec: number, message = 'Too many attempts. Try again later.') {
    super('RATE_LIMITED', 'rate-limited', message, { retryAfterSec, limiter });
  }
}

export class UnauthorizedError extends DomainError {
  constructor(message = 'A valid bearer token is required.') {
    super('UNAUTHORIZED', 'unauthorized', message);
  }
}

/**
 * A bearer token was sent and refused (malformed, bad signature, expired, revoked, of the other
 * kind): the 401 says error="invalid_token" (RFC 6750 §3). Same code as any other 401.
 */
export class InvalidBearerTokenError extends UnauthorizedError {}

export class NotFoundError extends DomainError {
  constructor(message = 'The resource does not exist.') {
    super('NOT_FOUND', 'not-found', message);
  }
}
