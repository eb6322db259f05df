import { Env, InvalidEnvironmentError, loadEnv } from './env.js';

const SECRET = 's'.repeat(32);
const PRODUCTION = {
  NODE_ENV: 'production',
  DEVICE_JWT_SECRET: SECRET,
  CUSTOMER_JWT_SECRET: SECRET,
  SECRET_PEPPER: SECRET,
  DATABASE_URL: 'postgres://app@db:5432/app',
};

const KEY_NAMES = ['DEVICE_JWT_SECRET', 'CUSTOMER_JWT_SECRET', 'SECRET_PEPPER'] as const;

/** The variables an InvalidEnvironmentError names, in order. */
function badVariables(source: Record<string, string | undefined>): string[] {
  try {
    loadEnv(source);
  } catch (error) {
    if (error instanceof InvalidEnvironmentError) return error.problems.map((problem) => problem.split(':')[0]);
    throw error;
  }
  throw new Error('loadEnv accepted the environment');
}

describe('loadEnv', () => {
  it('fills in the defaults for an empty environment', () => {
    const env = loadEnv({});

    expect(env).toBeInstanceOf(Env);
    expect(env).toMatchObject({
      NODE_ENV: 'development',
      PORT: 3000,
      HOST: '0.0.0.0',
      LOG_LEVEL: 'info',
      DATA_DIR: './.data',
      EMBEDDED_POSTGRES_PORT: 54329,
      DB_POOL_SIZE: 10,
      DATABASE_CONNECT_TIMEOUT_MS: 3000,
      DATABASE_STATEMENT_TIMEOUT_MS: 5000,
      DEVICE_ACCESS_TOKEN_TTL_SEC: 3600,
      DEVICE_REFRESH_TOKEN_TTL_DAYS: 30,
      REGISTRATION_RETRY_WINDOW_SEC: 600,
      LOGIN_MAX_FAILURES_PER_DEVICE: 10,
      LOGIN_MAX_FAILURES_PER_ADDRESS: 50,
      LOGIN_FAILURE_WINDOW_SEC: 900,
      REGISTRATION_MAX_PER_ADDRESS: 30,
      REGISTRATION_WINDOW_SEC: 3600,
      TELEMETRY_MAX_REQUESTS_PER_DEVICE: 120,
      TELEMETRY_RATE_WINDOW_SEC: 60,
      BODY_LIMIT_BYTES: 256 * 1024,
      REQUEST_TIMEOUT_MS: 10_000,
      // Above the gateways' 60 s upload interval: the next upload finds its connection open.
      KEEP_ALIVE_TIMEOUT_MS: 72_000,
      SHUTDOWN_DELAY_MS: 2000,
      SHUTDOWN_GRACE_MS: 20_000,
    });
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.DEVICE_JWT_SECRET).toBeUndefined();
    expect(env.CUSTOMER_JWT_SECRET).toBeUndefined();
    expect(env.SECRET_PEPPER).toBeUndefined();
    expect(env.TRUST_PROXY).toBeUndefined();
    // Unset: links in mails are built from the address the service listens on.
    expect(env.PUBLIC_BASE_URL).toBeUndefined();
  });

  it('keeps the default of a variable that is present but undefined', () => {
    expect(loadEnv({ PORT: undefined, DATA_DIR: undefined })).toMatchObject({ PORT: 3000, DATA_DIR: './.data' });
  });

  it('parses numeric strings into numbers', () => {
    const env = loadEnv({ PORT: '8080', DB_POOL_SIZE: ' 25 ', REGISTRATION_RETRY_WINDOW_SEC: '0', LOGIN_MAX_FAILURES_PER_DEVICE: '3' });

    expect(env.PORT).toBe(8080);
    expect(env.DB_POOL_SIZE).toBe(25);
    expect(env.REGISTRATION_RETRY_WINDOW_SEC).toBe(0);
    expect(env.LOGIN_MAX_FAILURES_PER_DEVICE).toBe(3);
  });

  it('keeps strings as given', () => {
    const env = loadEnv({ HOST: '127.0.0.1', LOG_LEVEL: 'debug', DATA_DIR: '/var/lib/dcs', DATABASE_URL: 'postgresql://u@h/db', TRUST_PROXY: '10.0.0.0/8' });

    expect(env).toMatchObject({ HOST: '127.0.0.1', LOG_LEVEL: 'debug', DATA_DIR: '/var/lib/dcs', DATABASE_URL: 'postgresql://u@h/db', TRUST_PROXY: '10.0.0.0/8' });
  });

  it('treats blank optional variables as unset', () => {
    const env = loadEnv({ DATABASE_URL: '', DEVICE_JWT_SECRET: '  ', TRUST_PROXY: '', PUBLIC_BASE_URL: ' ' });

    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.DEVICE_JWT_SECRET).toBeUndefined();
    expect(env.TRUST_PROXY).toBeUndefined();
    expect(env.PUBLIC_BASE_URL).toBeUndefined();
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['LOG_LEVEL', 'loud'],
    ['NODE_ENV', 'staging'],
    ['DATABASE_URL', 'mysql://x'],
    ['DB_POOL_SIZE', '0'],
    ['DATABASE_CONNECT_TIMEOUT_MS', '50'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '-1'],
    ['LOGIN_FAILURE_WINDOW_SEC', 'soon'],
    ['REGISTRATION_MAX_PER_ADDRESS', '0'],
    ['TELEMETRY_MAX_REQUESTS_PER_DEVICE', '0'],
    ['TELEMETRY_RATE_WINDOW_SEC', '3601'],
    ['DEVICE_ACCESS_TOKEN_TTL_SEC', '59'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['REDIS_URL', '127.0.0.1:6379'],
    ['REDIS_KEY_PREFIX', 'dcs rl'],
    ['REDIS_KEY_PREFIX', 'x'.repeat(65)],
    ['KEEP_ALIVE_TIMEOUT_MS', '999'],
    ['KEEP_ALIVE_TIMEOUT_MS', '600001'],
    ['PUBLIC_BASE_URL', 'dash.example.com'],
  ])('rejects %s=%j naming the variable', (name, value) => {
    expect(() => loadEnv({ [name]: value })).toThrow(InvalidEnvironmentError);
    expect(badVariables({ [name]: value })).toEqual([name]);
  });

  it('takes a redis:// or rediss:// REDIS_URL, blank as unset, and REDIS_KEY_PREFIX defaulting to dcs:', () => {
    expect(loadEnv({}).REDIS_URL).toBeUndefined();
    expect(loadEnv({ REDIS_URL: ' ' }).REDIS_URL).toBeUndefined();
    expect(loadEnv({ REDIS_URL: 'redis://127.0.0.1:6379' }).REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(loadEnv({ REDIS_URL: 'rediss://:secret@cache.internal:6380/2' }).REDIS_URL).toBe('rediss://:secret@cache.internal:6380/2');
    expect(loadEnv({}).REDIS_KEY_PREFIX).toBe('dcs:');
    expect(loadEnv({ REDIS_KEY_PREFIX: 'staging.dcs:' }).REDIS_KEY_PREFIX).toBe('staging.dcs:');
  });

  it('takes TLS_CERT_FILE and TLS_KEY_FILE together, and names both when only one is set', () => {
    expect(loadEnv({}).TLS_CERT_FILE).toBeUndefined();
    expect(loadEnv({ TLS_CERT_FILE: ' ', TLS_KEY_FILE: '' }).TLS_KEY_FILE).toBeUndefined();
    expect(loadEnv({ TLS_CERT_FILE: '/etc/dcs/cert.pem', TLS_KEY_FILE: '/etc/dcs/key.pem' })).toMatchObject({ TLS_CERT_FILE: '/etc/dcs/cert.pem', TLS_KEY_FILE: '/etc/dcs/key.pem' });
    expect(badVariables({ TLS_CERT_FILE: '/etc/dcs/cert.pem' })).toEqual(['TLS_CERT_FILE, TLS_KEY_FILE']);
    expect(badVariables({ TLS_KEY_FILE: '/etc/dcs/key.pem', TLS_CERT_FILE: ' ' })).toEqual(['TLS_CERT_FILE, TLS_KEY_FILE']);
  });

  it('leaves metrics off unless METRICS_PORT is set, on loopback by default, never on the API port', () => {
    expect(loadEnv({}).METRICS_PORT).toBeUndefined();
    expect(loadEnv({ METRICS_PORT: ' ' }).METRICS_PORT).toBeUndefined();
    expect(loadEnv({}).METRICS_HOST).toBe('127.0.0.1');
    expect(loadEnv({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' })).toMatchObject({ METRICS_PORT: 9464, METRICS_HOST: '0.0.0.0' });
    expect(loadEnv({ PORT: '0', METRICS_PORT: '0' }).METRICS_PORT).toBe(0);
    expect(badVariables({ METRICS_PORT: 'metrics' })).toEqual(['METRICS_PORT']);
    expect(badVariables({ METRICS_PORT: '65536' })).toEqual(['METRICS_PORT']);
    expect(badVariables({ PORT: '8080', METRICS_PORT: '8080' })).toEqual(['METRICS_PORT']);
    expect(badVariables({ METRICS_PORT: '3000' })).toEqual(['METRICS_PORT']);
  });

  it('names every bad variable at once, in the message too', () => {
    const source = { PORT: 'abc', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x', DB_POOL_SIZE: '500' };

    expect(badVariables(source).sort()).toEqual(['DATABASE_URL', 'DB_POOL_SIZE', 'LOG_LEVEL', 'PORT']);
    for (const name of Object.keys(source)) expect(() => loadEnv(source)).toThrow(name);
  });

  it('accepts production with every required variable', () => {
    expect(loadEnv(PRODUCTION).NODE_ENV).toBe('production');
  });

  it('refuses private webhook targets in production, and allows them elsewhere', () => {
    expect(badVariables({ ...PRODUCTION, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })).toEqual(['WEBHOOK_ALLOW_PRIVATE_TARGETS']);
    expect(loadEnv({ NODE_ENV: 'test', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(true);
    expect(loadEnv(PRODUCTION).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(false);
  });

  it('requires the keys and the database URL in production, naming each one missing', () => {
    expect(badVariables({ NODE_ENV: 'production' }).sort()).toEqual(['CUSTOMER_JWT_SECRET', 'DATABASE_URL', 'DEVICE_JWT_SECRET', 'SECRET_PEPPER']);
  });

  it.each(['DEVICE_JWT_SECRET', 'CUSTOMER_JWT_SECRET', 'SECRET_PEPPER', 'DATABASE_URL'])('names %s when production lacks only it', (name) => {
    expect(badVariables({ ...PRODUCTION, [name]: undefined })).toEqual([name]);
    expect(badVariables({ ...PRODUCTION, [name]: '' })).toEqual([name]);
  });

  it.each(KEY_NAMES)('rejects a %s shorter than 32 characters and accepts 32', (name) => {
    expect(badVariables({ [name]: 'x'.repeat(31) })).toEqual([name]);
    expect(badVariables({ ...PRODUCTION, [name]: 'x'.repeat(31) })).toEqual([name]);
    expect(loadEnv({ [name]: 'x'.repeat(32) })[name]).toBe('x'.repeat(32));
  });
});
