import { createHmac } from 'node:crypto';
import jwt from 'jsonwebtoken';

/**
 * Everything the orchestrator, the baseline and the service must agree on: fixed keys (the
 * bench signs device and customer tokens itself), ports on 127.0.0.1, and the seeded identities.
 */
export const BENCH_SECRETS = {
  deviceJwtSecret: 'bench-device-jwt-secret-4f1c9a7e2b6d8053c1e7',
  customerJwtSecret: 'bench-customer-jwt-secret-9b3e5a1d7c2f4086e2a9',
  pepper: 'bench-secret-pepper-6d2a8f0c4e1b7395a3c5',
};

export const HOST = '127.0.0.1';
export const PG_PORT = 54339;
export const SERVICE_PORT = 3190;
export const BASELINE_PORT = 3191;
/** The second service process of S1 and S2, with ALERTS_ENABLED=false (3192 is the floor server's, bench/floor.ts). */
export const SERVICE_ALERTS_OFF_PORT = 3193;
/** The third service process of S1 and S2, with BATTERY_ANALYTICS_ENABLED=false. */
export const SERVICE_BATTERIES_OFF_PORT = 3194;
export const DATABASE = 'device_cloud_bench';
/** The service's default DB_POOL_SIZE; the baseline opens the same number of connections. */
export const POOL_SIZE = 10;
export const DEVICES_PER_CUSTOMER = 10;
export const CUSTOMER_PASSWORD = 'bench-password-0123';
export const BATTERY_ID = 'main';
/** Seeded metrics per record; ingest requests send the same four. */
export const METRICS = ['voltage', 'current', 'soc', 'temperature'] as const;

/** Claims as the service issues them (src/modules/devices/application/device-tokens.ts). */
const AUDIENCE = { device: 'device-cloud:device', customer: 'device-cloud:customer' } as const;
const ISSUER = 'device-cloud';
const ACCESS_TOKEN_TYPE = 'at+jwt';

export interface DeviceFixture {
  index: number;
  deviceId: string;
  secret: string;
  secretHash: string;
  ownerIndex: number;
}

export interface CustomerFixture {
  index: number;
  userId: string;
  email: string;
  /** The session (refresh-token family) the customer's access token names as `sid`; the seed keeps it live. */
  sessionId: string;
}

export function deviceId(index: number): string {
  return `bench-${String(index).padStart(5, '0')}`;
}

export function hmac(value: string): string {
  return createHmac('sha256', BENCH_SECRETS.pepper).update(value, 'utf8').digest('hex');
}

export function customerCount(devices: number): number {
  return Math.max(1, Math.ceil(devices / DEVICES_PER_CUSTOMER));
}

export function devicesOf(count: number): DeviceFixture[] {
  return Array.from({ length: count }, (_, index) => {
    const secret = `bench-device-secret-${index}`;
    return { index, deviceId: deviceId(index), secret, secretHash: hmac(secret), ownerIndex: Math.floor(index / DEVICES_PER_CUSTOMER) };
  });
}

export function customersOf(devices: number): CustomerFixture[] {
  return Array.from({ length: customerCount(devices) }, (_, index) => ({
    index,
    // Fixed ids, so a reused database and a new run agree without asking it.
    userId: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
    email: `bench-customer-${index}@example.com`,
    sessionId: `00000000-0000-4000-9000-${String(index).padStart(12, '0')}`,
  }));
}

/**
 * S6's streamed devices: a set of their own, each claimed by an account of its own (its viewer),
 * kept apart from the seeded fleet so S1–S5 and their history never see them. bench/seed.ts adds
 * them (no history) to whatever database a run uses.
 */
export const LIVE_DEVICES = 200;

export function liveDevicesOf(): DeviceFixture[] {
  return Array.from({ length: LIVE_DEVICES }, (_, index) => {
    const secret = `bench-live-secret-${index}`;
    return { index, deviceId: `bench-live-${String(index).padStart(5, '0')}`, secret, secretHash: hmac(secret), ownerIndex: index };
  });
}

export function viewersOf(): CustomerFixture[] {
  return Array.from({ length: LIVE_DEVICES }, (_, index) => ({
    index,
    // Apart from customersOf's ids (…-8000-…, …-9000-…) for any fleet size.
    userId: `00000000-0000-4000-8001-${String(index).padStart(12, '0')}`,
    email: `bench-viewer-${index}@example.com`,
    sessionId: `00000000-0000-4000-9001-${String(index).padStart(12, '0')}`,
  }));
}

/**
 * The gateways of S9 (each holds a long poll of its commands) and S10 (they upload logs): a set
 * of their own, like S6's, claimed by accounts of their own (their operators, who send the
 * commands), DEVICES_PER_CUSTOMER each, with no telemetry history. bench/seed.ts adds them to
 * whatever database a run uses.
 */
export const GATEWAYS = 1000;

export function gatewaysOf(): DeviceFixture[] {
  return Array.from({ length: GATEWAYS }, (_, index) => {
    const secret = `bench-gateway-secret-${index}`;
    return { index, deviceId: `bench-gw-${String(index).padStart(5, '0')}`, secret, secretHash: hmac(secret), ownerIndex: Math.floor(index / DEVICES_PER_CUSTOMER) };
  });
}

export function operatorsOf(): CustomerFixture[] {
  return Array.from({ length: Math.ceil(GATEWAYS / DEVICES_PER_CUSTOMER) }, (_, index) => ({
    index,
    // Apart from customersOf's and viewersOf's ids.
    userId: `00000000-0000-4000-8002-${String(index).padStart(12, '0')}`,
    email: `bench-operator-${index}@example.com`,
    sessionId: `00000000-0000-4000-9002-${String(index).padStart(12, '0')}`,
  }));
}

/**
 * S11's organization: 10,000 devices of its own (`bench-org-00000`…`09999`, no telemetry), owned
 * by the organization itself, and one member account, an operator, whose token lists them. Apart
 * from the seeded fleet and S6's and S9's devices; bench/seed.ts adds them to whatever database a
 * run uses.
 */
export const ORGANIZATION_ID = '00000000-0000-4000-8003-000000000000';
export const ORGANIZATION_DEVICES = 10_000;

export function organizationDevicesOf(): DeviceFixture[] {
  return Array.from({ length: ORGANIZATION_DEVICES }, (_, index) => {
    const secret = `bench-org-secret-${index}`;
    // ownerIndex: the member (the organization owns them; the member only sees them).
    return { index, deviceId: `bench-org-${String(index).padStart(5, '0')}`, secret, secretHash: hmac(secret), ownerIndex: 0 };
  });
}

export function organizationMembersOf(): CustomerFixture[] {
  return [
    {
      index: 0,
      // Apart from customersOf's, viewersOf's and operatorsOf's ids, and from the organization's.
      userId: '00000000-0000-4000-8004-000000000000',
      email: 'bench-org-member-0@example.com',
      sessionId: '00000000-0000-4000-9004-000000000000',
    },
  ];
}

const TOKEN_TTL_SEC = 6 * 3600;

export function deviceAccessToken(device: DeviceFixture): string {
  return jwt.sign({ sub: device.deviceId, tv: 1 }, BENCH_SECRETS.deviceJwtSecret, {
    audience: AUDIENCE.device,
    issuer: ISSUER,
    expiresIn: TOKEN_TTL_SEC,
    algorithm: 'HS256',
    header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE },
  });
}

export function customerAccessToken(customer: CustomerFixture): string {
  return jwt.sign({ sub: customer.userId, tv: 1, sid: customer.sessionId, role: 'customer' }, BENCH_SECRETS.customerJwtSecret, {
    audience: AUDIENCE.customer,
    issuer: ISSUER,
    expiresIn: TOKEN_TTL_SEC,
    algorithm: 'HS256',
    header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE },
  });
}
