import { loadEnv } from '../config/env.js';
import { logFormat } from './logging.js';

describe('logFormat: lines for people on a terminal in development, JSON everywhere else', () => {
  it.each([
    ['development on a terminal', { NODE_ENV: 'development' }, true, 'pretty'],
    ['development piped (a log collector, a test)', { NODE_ENV: 'development' }, false, 'json'],
    ['production on a terminal', { NODE_ENV: 'production', DATABASE_URL: 'postgres://x/y', DEVICE_JWT_SECRET: 'd'.repeat(32), CUSTOMER_JWT_SECRET: 'c'.repeat(32), SECRET_PEPPER: 'p'.repeat(32) }, true, 'json'],
    ['test on a terminal', { NODE_ENV: 'test' }, true, 'json'],
    ['LOG_FORMAT=json on a terminal', { NODE_ENV: 'development', LOG_FORMAT: 'json' }, true, 'json'],
    ['LOG_FORMAT=pretty piped', { NODE_ENV: 'production', LOG_FORMAT: 'pretty', DATABASE_URL: 'postgres://x/y', DEVICE_JWT_SECRET: 'd'.repeat(32), CUSTOMER_JWT_SECRET: 'c'.repeat(32), SECRET_PEPPER: 'p'.repeat(32) }, false, 'pretty'],
  ])('%s', (_name, source, terminal, expected) => {
    expect(logFormat(loadEnv(source), terminal)).toBe(expected);
  });

  it('refuses an unknown format at start', () => {
    expect(() => loadEnv({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT/);
  });
});
