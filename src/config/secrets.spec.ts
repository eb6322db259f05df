import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEnv } from './env.js';
import { resolveSecrets } from './secrets.js';

describe('resolveSecrets', () => {
  let root: string;
  let dataDir: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'dcs-secrets-'));
    dataDir = join(root, 'not-yet', 'created');
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  const secretsFile = () => join(dataDir, 'secrets.json');

  it('generates distinct strong keys once and keeps them in DATA_DIR/secrets.json, readable by the owner only', () => {
    const secrets = resolveSecrets(loadEnv({ DATA_DIR: dataDir }));

    const keys = [secrets.deviceJwtSecret, secrets.customerJwtSecret, secrets.pepper];
    for (const key of keys) expect(key.length).toBeGreaterThanOrEqual(32);
    expect(new Set(keys).size).toBe(3);
    expect(JSON.parse(readFileSync(secretsFile(), 'utf8'))).toEqual({
      deviceJwtSecret: secrets.deviceJwtSecret,
      customerJwtSecret: secrets.customerJwtSecret,
      pepper: secrets.pepper,
    });
    expect(statSync(secretsFile()).mode & 0o777).toBe(0o600);
  });

  it('returns the same keys on the next start without rewriting the file', () => {
    const env = loadEnv({ DATA_DIR: dataDir });
    const first = resolveSecrets(env);
    const writtenAt = statSync(secretsFile()).mtimeMs;
    const contents = readFileSync(secretsFile(), 'utf8');

    const second = resolveSecrets(env);

    expect(second).toEqual(first);
    expect(readFileSync(secretsFile(), 'utf8')).toBe(contents);
    expect(statSync(secretsFile()).mtimeMs).toBe(writtenAt);
  });

  it('lets keys from the environment win over stored ones', () => {
    const stored = resolveSecrets(loadEnv({ DATA_DIR: dataDir }));
    const deviceKey = 'd'.repeat(32);

    const secrets = resolveSecrets(loadEnv({ DATA_DIR: dataDir, DEVICE_JWT_SECRET: deviceKey }));

    expect(secrets.deviceJwtSecret).toBe(deviceKey);
    expect(secrets.customerJwtSecret).toBe(stored.customerJwtSecret);
    expect(secrets.pepper).toBe(stored.pepper);
  });

  it('touches no file when the environment provides every key', () => {
    const env = loadEnv({ DATA_DIR: dataDir, DEVICE_JWT_SECRET: 'd'.repeat(32), CUSTOMER_JWT_SECRET: 'c'.repeat(32), SECRET_PEPPER: 'p'.repeat(32) });

    const secrets = resolveSecrets(env);

    expect(secrets).toMatchObject({ deviceJwtSecret: 'd'.repeat(32), customerJwtSecret: 'c'.repeat(32), pepper: 'p'.repeat(32) });
    expect(existsSync(dataDir)).toBe(false);
  });
});
