import type pg from 'pg';

export interface DeviceRow {
  device_id: string;
  hardware_id: string;
  firmware_version: string;
  claim_code_hash: string | null;
  secret_hash: string;
  token_version: number;
  registered_at: Date;
  credentials_issued_at: Date;
  credentials_used_at: Date | null;
  last_seen_at: Date | null;
  owner_id: string | null;
  claimed_at: Date | null;
}

export interface RefreshTokenRow {
  id: string;
  device_id: string;
  token_hash: string;
  token_version: number;
  family_id: string;
  issued_at: Date;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}

/** The device's row, or undefined when there is none. */
export async function deviceRow(db: pg.Pool, deviceId: string): Promise<DeviceRow | undefined> {
  const { rows } = await db.query<DeviceRow>('SELECT * FROM devices WHERE device_id = $1', [deviceId]);
  return rows[0];
}

/** The device's refresh tokens, oldest first. */
export async function refreshTokenRows(db: pg.Pool, deviceId: string): Promise<RefreshTokenRow[]> {
  const { rows } = await db.query<RefreshTokenRow>('SELECT * FROM device_refresh_tokens WHERE device_id = $1 ORDER BY issued_at, id', [deviceId]);
  return rows;
}

/** Row counts of both tables, to show that a rejected request wrote nothing. */
export async function tableCounts(db: pg.Pool): Promise<{ devices: number; refreshTokens: number }> {
  const { rows } = await db.query<{ devices: number; refresh_tokens: number }>(
    'SELECT (SELECT count(*)::int FROM devices) AS devices, (SELECT count(*)::int FROM device_refresh_tokens) AS refresh_tokens',
  );
  return { devices: rows[0].devices, refreshTokens: rows[0].refresh_tokens };
}

/** The device and its refresh tokens together: equal snapshots mean nothing changed. */
export async function snapshot(db: pg.Pool, deviceId: string): Promise<{ device: DeviceRow | undefined; refreshTokens: RefreshTokenRow[] }> {
  return { device: await deviceRow(db, deviceId), refreshTokens: await refreshTokenRows(db, deviceId) };
}
