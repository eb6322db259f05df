import { randomBytes, randomInt } from 'node:crypto';
import type { components } from '@device-cloud/client';
import type { ApiClient } from './create-test-app.js';

export type RegisterBody = components['schemas']['RegisterDeviceRequest'];
export type Registered = components['schemas']['RegisterDeviceResponse'];

/** A deviceId no other test uses, e.g. `gw-3f9a1c07`. */
export function aDeviceId(prefix = 'gw'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

function randomLetters(count: number): string {
  return Array.from({ length: count }, () => String.fromCharCode(65 + randomInt(26))).join('');
}

/** A well-formed claim code as printed on a label: three groups of four upper-case letters. */
export function aClaimCode(): string {
  return [randomLetters(4), randomLetters(4), randomLetters(4)].join('-');
}

/** A valid registration of a current-firmware gateway (claim code required). */
export function aRegistration(overrides: Partial<RegisterBody> = {}): RegisterBody {
  const deviceId = overrides.deviceId ?? aDeviceId();
  return { deviceId, hardwareId: `hw-${deviceId}`, firmwareVersion: '0.1.4', claimCode: aClaimCode(), ...overrides };
}

/**
 * A gateway on firmware older than 0.1.4, which sends no claim code. The explicit undefined survives
 * being spread into aRegistration (registerDevice) and is left out of the JSON body.
 */
export function aLegacyRegistration(overrides: Partial<RegisterBody> = {}): RegisterBody {
  return aRegistration({ firmwareVersion: '0.1.3', ...overrides, claimCode: undefined });
}

/** Registers and returns the 201 body; fails the test on any other answer. */
export async function registerDevice(api: ApiClient, overrides: Partial<RegisterBody> = {}): Promise<Registered> {
  const body = aRegistration(overrides);
  const { data, response } = await api.POST('/api/v1/device/register', { body });
  if (response.status !== 201 || !data) throw new Error(`registration of ${body.deviceId} answered ${response.status}`);
  return data;
}

export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

export function login(api: ApiClient, deviceId: string, deviceSecret: string) {
  return api.POST('/api/v1/device/login', { body: { deviceId, deviceSecret } });
}

export function refresh(api: ApiClient, refreshToken: string) {
  return api.POST('/api/v1/device/token/refresh', { body: { refreshToken } });
}

export function getMe(api: ApiClient, accessToken: string) {
  return api.GET('/api/v1/device/me', { headers: bearer(accessToken) });
}
