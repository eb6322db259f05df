import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { components } from '@device-cloud/client';
import { aRegistration, bearer, registerDevice, type RegisterBody, type Registered } from './builders.js';
import type { TestApp } from './create-test-app.js';
import { userIdOf } from './customers.js';
import type { DeviceRow } from './database-state.js';

export type ClaimBody = components['schemas']['ClaimDeviceRequest'];

export const CUSTOMER_PASSWORD = 'long-password-1';

/** Credentials of the administrator an app creates at start; spread ADMIN_SETTINGS into createTestApp. */
export const ADMIN_EMAIL = 'admin@device-cloud.test';
export const ADMIN_PASSWORD = 'keeper-of-the-fleet-7';
export const ADMIN_SETTINGS = { ADMIN_EMAIL, ADMIN_PASSWORD };

export interface SignedIn {
  userId: string;
  email: string;
  accessToken: string;
  headers: { authorization: string };
}

async function logIn(t: TestApp, email: string, password: string): Promise<{ accessToken: string; headers: { authorization: string } }> {
  const { data, response } = await t.api.POST('/api/v1/auth/login', { body: { email, password } });
  if (response.status !== 200 || !data) throw new Error(`login of ${email} answered ${response.status}`);
  return { accessToken: data.accessToken, headers: bearer(data.accessToken) };
}

/**
 * A signed-up, logged-in customer with a unique e-mail. Verified by default: the fixture sets
 * email_verified_at directly, a documented shortcut (the verification flow is tested elsewhere).
 */
export async function aCustomer(t: TestApp, { verified = true }: { verified?: boolean } = {}): Promise<SignedIn> {
  const email = `customer-${randomBytes(6).toString('hex')}@example.com`;
  const { data, response } = await t.api.POST('/api/v1/auth/signup', { body: { email, password: CUSTOMER_PASSWORD } });
  if (response.status !== 201 || !data) throw new Error(`signup of ${email} answered ${response.status}`);
  const userId = await userIdOf(t, data.email);
  if (verified) await t.db.query('UPDATE users SET email_verified_at = now() WHERE id = $1', [userId]);
  return { userId, email, ...(await logIn(t, email, CUSTOMER_PASSWORD)) };
}

/** The administrator of an app created with ADMIN_SETTINGS (or the given credentials), logged in. */
export async function anAdmin(t: TestApp, email = ADMIN_EMAIL, password = ADMIN_PASSWORD): Promise<SignedIn> {
  const session = await logIn(t, email, password);
  const { data, response } = await t.api.GET('/api/v1/users/me', { headers: session.headers });
  if (response.status !== 200 || !data || data.role !== 'admin') throw new Error(`${email} is not an administrator (${response.status}, ${data?.role})`);
  return { userId: data.userId, email: data.email, ...session };
}

export function claim(t: TestApp, who: { headers: { authorization: string } } | undefined, body: ClaimBody) {
  return t.api.POST('/api/v1/user/devices/claim', { body, headers: who?.headers });
}

/** Registers a current-firmware device and returns its registration with the claim code it was given. */
export async function aRegisteredDevice(t: TestApp, overrides: Partial<RegisterBody> = {}): Promise<{ body: RegisterBody; registered: Registered }> {
  const body = aRegistration(overrides);
  return { body, registered: await registerDevice(t.api, body) };
}

/** Registers a device and has `owner` claim it with its code; fails the test unless that answers 200. */
export async function aClaimedDevice(t: TestApp, owner: SignedIn, overrides: Partial<RegisterBody> = {}) {
  const device = await aRegisteredDevice(t, overrides);
  const { response } = await claim(t, owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode });
  if (response.status !== 200) throw new Error(`claim of ${device.body.deviceId} answered ${response.status}`);
  return device;
}

/** The device row with the ownership columns this feature added. */
export interface OwnedDeviceRow extends DeviceRow {
  re_registration_until: Date | null;
  visible_since: Date | null;
  last_released_at: Date | null;
}

export async function ownedDeviceRow(db: pg.Pool, deviceId: string): Promise<OwnedDeviceRow | undefined> {
  const { rows } = await db.query<OwnedDeviceRow>('SELECT * FROM devices WHERE device_id = $1', [deviceId]);
  return rows[0];
}

export interface AuditRow {
  at: Date;
  user_id: string;
  device_id: string;
  action: string;
  outcome: string;
  client_address: string;
}

/** The device's claim_audit rows, oldest first. */
export async function auditRows(db: pg.Pool, deviceId: string): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>('SELECT at, user_id, device_id, action, outcome, client_address FROM claim_audit WHERE device_id = $1 ORDER BY id', [
    deviceId,
  ]);
  return rows;
}

export async function auditCount(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM claim_audit');
  return rows[0].n;
}
