import { DomainError } from '../domain-error.js';

/** What a client is told to wait before retrying when the database cannot serve it. */
export const DATABASE_RETRY_AFTER_SEC = 5;

/** read_only_sql_transaction. */
const READ_ONLY_SQLSTATE = '25006';

/** Socket errors: the server cannot be reached, or the connection broke. */
const NETWORK_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

/**
 * SQLSTATEs that say "not now" rather than "your request is wrong": admin_shutdown (57P01, also
 * what pg_terminate_backend sends), crash_shutdown, cannot_connect_now (starting up or shutting
 * down), idle_session_timeout, too_many_connections, query_canceled (statement_timeout),
 * idle_in_transaction_session_timeout and read_only_sql_transaction (25006: a write reached a
 * standby — a primary demoted under a failover that the endpoint still reaches — or a primary set
 * read-only, as managed PostgreSQL does when its disk is nearly full). Class 08 (connection
 * exception) is matched as a class.
 */
const TRANSIENT_SQLSTATE = new Set(['57P01', '57P02', '57P03', '57P05', '53300', '57014', '25P03', READ_ONLY_SQLSTATE]);

/** node-postgres raises these without a code: a pool that waited too long, a session that died. */
const DRIVER_MESSAGE =
  /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|Query read timeout|Cannot use a pool after calling end on the pool)/;

/**
 * Why the database cannot serve, as far as this instance can tell: `unreachable` (down, starting,
 * refusing, the session killed), `pool-busy` (every connection of this instance's pool is in use
 * and none came free in time: the database itself may be fine), `overloaded` (PostgreSQL cancelled
 * the statement after DATABASE_STATEMENT_TIMEOUT_MS, or refuses more connections), `read-only` (a
 * write reached a server that takes none now; reads still work).
 */
export type UnavailableCause = 'unreachable' | 'pool-busy' | 'overloaded' | 'read-only';

const DETAIL_OF_CAUSE: Record<UnavailableCause, string> = {
  unreachable: 'The database is not reachable. Retry later.',
  'pool-busy': 'Every database connection of this instance is busy. Retry later.',
  overloaded: 'The database is overloaded and did not answer in time. Retry later.',
  'read-only': 'The database takes no writes right now (read-only, or a standby during a failover). Retry later.',
};

/** pg-pool's message when no pooled connection came free within the connect timeout. */
const POOL_WAIT_TIMEOUT = 'timeout exceeded when trying to connect';

function causeOf(reason: string, cause: unknown): UnavailableCause {
  if (reason === '57014' || reason === '53300') return 'overloaded';
  if (reason === READ_ONLY_SQLSTATE) return 'read-only';
  const message = (cause as { message?: unknown } | undefined)?.message;
  return message === POOL_WAIT_TIMEOUT ? 'pool-busy' : 'unreachable';
}

/**
 * The database cannot serve this request right now: it is down, starting, unreachable, too busy, or
 * the session was killed. Answered as 503 SERVICE_UNAVAILABLE with Retry-After and a detail that
 * names the cause; retrying later is the right reaction. The driver's error stays in `cause` (only
 * its code is ever logged).
 */
export class DatabaseUnavailableError extends DomainError {
  readonly unavailableCause: UnavailableCause;

  constructor(
    readonly reason: string,
    cause?: unknown,
  ) {
    const unavailableCause = causeOf(reason, cause);
    super('SERVICE_UNAVAILABLE', 'unavailable', DETAIL_OF_CAUSE[unavailableCause], { retryAfterSec: DATABASE_RETRY_AFTER_SEC });
    this.unavailableCause = unavailableCause;
    if (cause !== undefined) this.cause = cause;
  }
}

/** True for every error that means the database is unavailable, whichever layer raised it. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (NETWORK_ERRNO.has(code) || TRANSIENT_SQLSTATE.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  return typeof message === 'string' && DRIVER_MESSAGE.test(message);
}

/** The error to throw on: a DatabaseUnavailableError for unavailability, the error itself otherwise. */
export function asDatabaseError(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError || !isDatabaseUnavailable(error)) return error;
  const code = (error as { code?: unknown }).code;
  return new DatabaseUnavailableError(typeof code === 'string' ? code : 'connection', error);
}
