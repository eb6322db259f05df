import { aClaimCode, aDeviceId, aLegacyRegistration, aRegistration, bearer, registerDevice, type RegisterBody } from '../support/builders.js';
import { aCustomer } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { deviceRow, tableCounts } from '../support/database-state.js';
import { expectProblem } from '../support/problems.js';
import { ingest, iso, telemetryRows } from '../support/telemetry.js';

/*
 * A stranger cannot lock a gateway out, and the unauthenticated doors and
 * the ingest route are throttled. Requests name their client through X-Forwarded-For from the
 * trusted proxy 127.0.0.1 (see client-address.e2e-spec.ts).
 */
const from = (address: string) => ({ 'x-forwarded-for': address });

let serial = 0;
/** A client address no other test uses. */
const anAddress = () => `198.51.100.${++serial}`;

function expectRetryAfterWithin(response: Response, maxSec: number): void {
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(maxSec);
}

describe('device login with the default limits', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ TRUST_PROXY: '127.0.0.1' });
  });
  afterAll(() => t.close());

  const loginFrom = (address: string, deviceId: string, deviceSecret: string) =>
    t.api.POST('/api/v1/device/login', { body: { deviceId, deviceSecret }, headers: from(address) });

  it("the correct secret logs in after 50 wrong guesses from another address; the attacker's address gets 429 with Retry-After", async () => {
    const device = await registerDevice(t.api);
    const attacker = anAddress();
    for (let i = 0; i < 50; i++) expectProblem(await loginFrom(attacker, device.deviceId, `wrong-${i}`), 401, 'INVALID_CREDENTIALS');

    const refused = await loginFrom(attacker, device.deviceId, 'wrong-50');
    expectProblem(refused, 429, 'RATE_LIMITED');
    expectRetryAfterWithin(refused.response, 900);
    expect((await deviceRow(t.db, device.deviceId))!.credentials_used_at).toBeNull();

    const { data, response } = await loginFrom(anAddress(), device.deviceId, device.deviceSecret);

    expect(response.status).toBe(200);
    expect((await t.api.GET('/api/v1/device/me', { headers: bearer(data!.accessToken) })).response.status).toBe(200);
    expect((await deviceRow(t.db, device.deviceId))!.credentials_used_at).not.toBeNull();
  });

  it('the attacker is refused even the right secret from its address while the gateway logs in from its own', async () => {
    const device = await registerDevice(t.api);
    const attacker = anAddress();
    for (let i = 0; i < 50; i++) await loginFrom(attacker, aDeviceId(), 'wrong');

    expectProblem(await loginFrom(attacker, device.deviceId, device.deviceSecret), 429, 'RATE_LIMITED');
    expect((await loginFrom(anAddress(), device.deviceId, device.deviceSecret)).response.status).toBe(200);
  });
});

describe('new devices per client address (REGISTRATION_MAX_PER_ADDRESS=3 per hour)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ TRUST_PROXY: '127.0.0.1', REGISTRATION_MAX_PER_ADDRESS: '3', REGISTRATION_WINDOW_SEC: '3600' });
  });
  afterAll(() => t.close());

  const registerFrom = (address: string, body: RegisterBody) => t.api.POST('/api/v1/device/register', { body, headers: from(address) });

  it('three new devices get 201, the fourth 429 with Retry-After and nothing stored; another address still registers', async () => {
    const installer = anAddress();
    for (let i = 0; i < 3; i++) expect((await registerFrom(installer, aRegistration())).response.status).toBe(201);
    const before = await tableCounts(t.db);
    const fourth = aRegistration();

    const refused = await registerFrom(installer, fourth);

    expectProblem(refused, 429, 'RATE_LIMITED');
    expectRetryAfterWithin(refused.response, 3600);
    expect(Number(refused.response.headers.get('retry-after'))).toBeGreaterThan(3500);
    expect(await deviceRow(t.db, fourth.deviceId)).toBeUndefined();
    expect(await tableCounts(t.db)).toEqual(before);
    expect((await registerFrom(anAddress(), fourth)).response.status).toBe(201);
  });

  it('a lost-response retry and a refused registration of a known id use none of the budget', async () => {
    const installer = anAddress();
    const first = aLegacyRegistration();
    expect((await registerFrom(installer, first)).response.status).toBe(201);
    expect((await registerFrom(installer, first)).response.status).toBe(201);
    expectProblem(await registerFrom(installer, { ...first, hardwareId: 'someone-else' }), 409, 'DEVICE_ALREADY_REGISTERED');

    expect((await registerFrom(installer, aRegistration())).response.status).toBe(201);
    expect((await registerFrom(installer, aRegistration())).response.status).toBe(201);
    expectProblem(await registerFrom(installer, aRegistration()), 429, 'RATE_LIMITED');
  });

  it('registrations refused for their body or firmware use none of the budget', async () => {
    const installer = anAddress();
    for (let i = 0; i < 5; i++) expectProblem(await registerFrom(installer, aRegistration({ claimCode: undefined })), 400, 'CLAIM_CODE_REQUIRED');

    for (let i = 0; i < 3; i++) expect((await registerFrom(installer, aRegistration())).response.status).toBe(201);
  });
});

describe('telemetry uploads per device (TELEMETRY_MAX_REQUESTS_PER_DEVICE=5 per 60 s)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ TELEMETRY_MAX_REQUESTS_PER_DEVICE: '5', TELEMETRY_RATE_WINDOW_SEC: '60' });
  });
  afterAll(() => t.close());

  const aRecord = (offsetSec: number) => ({ ts: iso(Date.now() - 3_600_000 + offsetSec * 1000), metrics: { voltage: 13.1 } });

  it('five uploads are stored, the sixth is 429 with Retry-After and stores nothing; another device still uploads', async () => {
    const [flooder, neighbour] = await Promise.all([registerDevice(t.api), registerDevice(t.api)]);
    for (let i = 0; i < 5; i++) expect((await ingest(t.api, flooder.accessToken, [aRecord(i)])).data).toMatchObject({ accepted: 1 });

    const refused = await ingest(t.api, flooder.accessToken, [aRecord(5)]);

    expectProblem(refused, 429, 'RATE_LIMITED');
    expectRetryAfterWithin(refused.response, 60);
    expect(await telemetryRows(t.db, flooder.deviceId)).toHaveLength(5);
    expectProblem(await ingest(t.api, flooder.accessToken, [aRecord(6)]), 429, 'RATE_LIMITED');
    expect(await telemetryRows(t.db, flooder.deviceId)).toHaveLength(5);
    expect((await ingest(t.api, neighbour.accessToken, [aRecord(0)])).data).toMatchObject({ accepted: 1 });
  });

  it('a burst of parallel uploads gets exactly the limit through', async () => {
    const device = await registerDevice(t.api);

    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => ingest(t.api, device.accessToken, [aRecord(i)])));

    expect(results.map((result) => result.response.status).sort()).toEqual([...Array<number>(5).fill(200), ...Array<number>(7).fill(429)]);
    expect(await telemetryRows(t.db, device.deviceId)).toHaveLength(5);
  });
});

describe('auth routes take bodies of 4 KiB at most', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  /** A JSON object of exactly `bytes` bytes: `fields` plus a `padding` string (refused as unknown when it gets through). */
  const bodyOfSize = (bytes: number, fields: Record<string, string>) => {
    const bare = JSON.stringify({ ...fields, padding: '' });
    return JSON.stringify({ ...fields, padding: 'x'.repeat(bytes - bare.length) });
  };
  const post = (path: string, raw: string, headers: Record<string, string> = {}) =>
    fetch(`${t.baseUrl}${path}`, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers } });

  const routes: Array<[string, Record<string, string>]> = [
    ['/api/v1/device/register', { deviceId: 'gw-big', hardwareId: 'hw-big', firmwareVersion: '0.1.4', claimCode: 'ABCD-EFGH' }],
    ['/api/v1/device/login', { deviceId: 'gw-big', deviceSecret: 'secret' }],
    ['/api/v1/device/token/refresh', { refreshToken: 'dcr_x' }],
    ['/api/v1/auth/signup', { email: 'big@example.com', password: 'a-long-password-1' }],
    ['/api/v1/auth/login', { email: 'big@example.com', password: 'a-long-password-1' }],
    ['/api/v1/auth/refresh', { refreshToken: 'ucr_x' }],
    ['/api/v1/auth/logout', { refreshToken: 'ucr_x' }],
    ['/api/v1/auth/verify-email', { token: 'token' }],
  ];

  it.each(routes)('%s: a 5 KiB body is 413 PAYLOAD_TOO_LARGE and changes nothing', async (path, fields) => {
    const before = await tableCounts(t.db);

    const response = await post(path, bodyOfSize(5 * 1024, fields));

    expectProblem({ response, error: await response.json() }, 413, 'PAYLOAD_TOO_LARGE');
    expect(await tableCounts(t.db)).toEqual(before);
    expect(await t.db.query('SELECT 1 FROM users WHERE email = $1', ['big@example.com'])).toMatchObject({ rowCount: 0 });
  });

  it.each(routes)('%s: a body of exactly 4 KiB is read (and refused as invalid, not as too large)', async (path, fields) => {
    const raw = bodyOfSize(4 * 1024, fields);
    expect(Buffer.byteLength(raw)).toBe(4 * 1024);

    const response = await post(path, raw);

    expectProblem({ response, error: await response.json() }, 400, 'VALIDATION_FAILED');
  });

  it('/api/v1/auth/resend-verification: a 5 KiB body is 413 PAYLOAD_TOO_LARGE', async () => {
    const customer = await aCustomer(t, { verified: false });

    const response = await post('/api/v1/auth/resend-verification', bodyOfSize(5 * 1024, {}), bearer(customer.accessToken));

    expectProblem({ response, error: await response.json() }, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('a route outside auth keeps the general limit: a 5 KiB claim body is read', async () => {
    const customer = await aCustomer(t);

    const response = await post('/api/v1/user/devices/claim', bodyOfSize(5 * 1024, { deviceId: aDeviceId(), claimCode: aClaimCode() }), bearer(customer.accessToken));

    expectProblem({ response, error: await response.json() }, 400, 'VALIDATION_FAILED');
  });
});
