import { DomainError } from '../domain-error.js';
import { asDatabaseError, DatabaseUnavailableError, isDatabaseUnavailable } from './database-errors.js';

const withCode = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('database errors', () => {
  it.each([
    ['connection refused', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['connection reset', withCode('ECONNRESET')],
    ['session terminated (pg_terminate_backend, fast shutdown)', withCode('57P01', 'terminating connection due to administrator command')],
    ['server starting or stopping', withCode('57P03', 'the database system is starting up')],
    ['connection exception class 08', withCode('08006')],
    ['connection failure 08001', withCode('08001')],
    ['too many connections', withCode('53300')],
    ['statement timeout', withCode('57014', 'canceling statement due to statement timeout')],
    ['a write on a read-only server or a standby', withCode('25006', 'cannot execute INSERT in a read-only transaction')],
    ['pool connect timeout', new Error('timeout exceeded when trying to connect')],
    ['connection terminated', new Error('Connection terminated unexpectedly')],
    ['client connect timeout', new Error('Connection terminated due to connection timeout')],
    ['broken client reused', new Error('Client has encountered a connection error and is not queryable')],
    ['no answer in time', new Error('Query read timeout')],
  ])('%s is unavailability, answered 503 with Retry-After', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
    const mapped = asDatabaseError(error) as DatabaseUnavailableError;
    expect(mapped).toBeInstanceOf(DatabaseUnavailableError);
    expect({ code: mapped.code, kind: mapped.kind, retryAfterSec: mapped.details.retryAfterSec }).toEqual({ code: 'SERVICE_UNAVAILABLE', kind: 'unavailable', retryAfterSec: 5 });
    expect(mapped.cause).toBe(error);
  });

  it.each([
    ['connection refused', withCode('ECONNREFUSED'), 'unreachable', 'The database is not reachable. Retry later.'],
    ['session terminated', withCode('57P01'), 'unreachable', 'The database is not reachable. Retry later.'],
    ['client connect timeout', new Error('Connection terminated due to connection timeout'), 'unreachable', 'The database is not reachable. Retry later.'],
    ['no pooled connection came free in time', new Error('timeout exceeded when trying to connect'), 'pool-busy', 'Every database connection of this instance is busy. Retry later.'],
    ['statement timeout', withCode('57014'), 'overloaded', 'The database is overloaded and did not answer in time. Retry later.'],
    ['too many connections', withCode('53300'), 'overloaded', 'The database is overloaded and did not answer in time. Retry later.'],
    ['read-only', withCode('25006'), 'read-only', 'The database takes no writes right now (read-only, or a standby during a failover). Retry later.'],
  ])('%s: the 503 names its cause', (_name, error, cause, detail) => {
    const mapped = asDatabaseError(error) as DatabaseUnavailableError;
    expect({ cause: mapped.unavailableCause, detail: mapped.message }).toEqual({ cause, detail });
  });

  it.each([
    ['unique violation', withCode('23505', 'duplicate key value violates unique constraint')],
    ['deadlock (the writer retries it)', withCode('40P01')],
    ['syntax error', withCode('42601')],
    ['a domain error', new DomainError('NOT_FOUND', 'not-found', 'no such device')],
    ['a plain error', new Error('something else')],
    ['not an error', 'ECONNREFUSED'],
  ])('%s passes through unchanged', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
    expect(asDatabaseError(error)).toBe(error);
  });

  it('keeps the driver code as the reason, and does not wrap twice', () => {
    const once = asDatabaseError(withCode('57P01')) as DatabaseUnavailableError;
    expect(once.reason).toBe('57P01');
    expect(asDatabaseError(once)).toBe(once);
    expect((asDatabaseError(new Error('Connection terminated')) as DatabaseUnavailableError).reason).toBe('connection');
  });
});
