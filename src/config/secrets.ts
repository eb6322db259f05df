import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Env } from './env.js';

/** Keys the service signs and hashes with. Never logged, never stored in the database. */
export class Secrets {
  constructor(
    readonly deviceJwtSecret: string,
    readonly customerJwtSecret: string,
    /** Key of the HMAC that hashes device secrets and refresh tokens. */
    readonly pepper: string,
  ) {}
}

const FILE_NAME = 'secrets.json';

/**
 * Takes the keys from the environment. Outside production a missing key is generated once and
 * kept in DATA_DIR/secrets.json (mode 0600), so tokens and device secrets survive restarts.
 */
export function resolveSecrets(env: Env): Secrets {
  const fromEnv = {
    deviceJwtSecret: env.DEVICE_JWT_SECRET,
    customerJwtSecret: env.CUSTOMER_JWT_SECRET,
    pepper: env.SECRET_PEPPER,
  };
  if (fromEnv.deviceJwtSecret && fromEnv.customerJwtSecret && fromEnv.pepper) {
    return new Secrets(fromEnv.deviceJwtSecret, fromEnv.customerJwtSecret, fromEnv.pepper);
  }

  const path = join(env.DATA_DIR, FILE_NAME);
  let stored: Partial<Record<keyof typeof fromEnv, string>> = {};
  try {
    stored = JSON.parse(readFileSync(path, 'utf8')) as typeof stored;
  } catch {
    stored = {};
  }
  const generated = {
    deviceJwtSecret: stored.deviceJwtSecret ?? randomBytes(32).toString('base64url'),
    customerJwtSecret: stored.customerJwtSecret ?? randomBytes(32).toString('base64url'),
    pepper: stored.pepper ?? randomBytes(32).toString('base64url'),
  };
  if (JSON.stringify(stored) !== JSON.stringify(generated)) {
    mkdirSync(env.DATA_DIR, { recursive: true });
    writeFileSync(path, JSON.stringify(generated), { mode: 0o600 });
  }
  return new Secrets(
    fromEnv.deviceJwtSecret ?? generated.deviceJwtSecret,
    fromEnv.customerJwtSecret ?? generated.customerJwtSecret,
    fromEnv.pepper ?? generated.pepper,
  );
}
