import { aRegisteredDevice, aCustomer, claim, ownedDeviceRow } from '../support/claim-fixtures.js';
import { aClaimCode, aRegistration, login as deviceLogin, refresh as deviceRefresh, registerDevice } from '../support/builders.js';
import { sharedSecrets, startTestApp, startTwoInstances, type TestApp } from '../support/create-test-app.js';
import { signUp } from '../support/customers.js';
import { refreshTokenRows } from '../support/database-state.js';
import { createTestDatabase } from '../support/postgres.js';
import { expectProblem } from '../support/problems.js';
import { ingest } from '../support/telemetry.js';
import { aRedisKeyPrefix, deleteRedisKeys, redisForTests, TEST_REDIS_URL } from '../support/redis.js';

/*
 * Horizontal scale: two instances of the service on ONE PostgreSQL database and ONE Redis, as
 * behind a load balancer. Whatever one instance counted or rotated, the other must see. Without a
 * Redis at TEST_REDIS_URL (127.0.0.1:6379 by default) the first part is skipped with a message on
 * stderr, the suite's one allowed skip; .ci/run sets REQUIRE_REDIS=1 so there it runs or fails.
 * The last part (a Redis that does not answer) needs none and always runs.
 */
const redisAnswers = await redisForTests('the two-instance tests on one database and one Redis');
const describeWithRedis = redisAnswers ? describe : describe.skip;

const LIMIT = 4;
const WINDOW_SEC = 900;


function customerLogin(t: TestApp, email: string, password: string) {
  return t.api.POST('/api/v1/auth/login', { body: { email, password } });
}

function customerRefresh(t: TestApp, refreshToken: string) {
  return t.api.POST('/api/v1/auth/refresh', { body: { refreshToken } });
}

function customerMe(t: TestApp, accessToken: string) {
  return t.api.GET('/api/v1/users/me', { headers: { authorization: `Bearer ${accessToken}` } });
}

function expectRetryAfterWithin(response: Response, maxSec: number): void {
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(maxSec);
}

async function userRefreshTokens(t: TestApp, userId: string) {
  const { rows } = await t.db.query<{ revoked_at: Date | null; rotated_at: Date | null }>(
    'SELECT revoked_at, rotated_at FROM user_refresh_tokens WHERE user_id = $1 ORDER BY issued_at, id',
    [userId],
  );
  return rows;
}

async function tokenVersion(t: TestApp, userId: string): Promise<number> {
  return (await t.db.query<{ token_version: number }>('SELECT token_version FROM users WHERE id = $1', [userId])).rows[0].token_version;
}

describeWithRedis('two instances on one database and one Redis', () => {
  const keyPrefix = aRedisKeyPrefix();
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ a, b, close } = await startTwoInstances({
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: keyPrefix,
      CLAIM_MAX_FAILURES_PER_DEVICE: String(LIMIT),
      CLAIM_MAX_FAILURES_PER_CUSTOMER: '1000',
      CLAIM_FAILURE_WINDOW_SEC: String(WINDOW_SEC),
      // Every request comes from 127.0.0.1: the per-address limits stay out of the way.
      LOGIN_MAX_FAILURES_PER_DEVICE: String(LIMIT),
      LOGIN_MAX_FAILURES_PER_ADDRESS: '1000',
      LOGIN_FAILURE_WINDOW_SEC: String(WINDOW_SEC),
    }));
  });
  afterAll(async () => {
    await close?.();
    await deleteRedisKeys(keyPrefix);
  });

  describe('failure limits are counted once for both instances', () => {
    it('claim: wrong codes through A and through B add up; at the limit B answers 429 with Retry-After, even for the right code', async () => {
      const [guesser, rightful] = [await aCustomer(a), await aCustomer(b)];
      const { body } = await aRegisteredDevice(a);
      for (const instance of [a, b, a, b]) {
        expectProblem(await claim(instance, guesser, { deviceId: body.deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
      }

      const onB = await claim(b, rightful, { deviceId: body.deviceId, claimCode: body.claimCode });
      const onA = await claim(a, rightful, { deviceId: body.deviceId, claimCode: body.claimCode });

      for (const result of [onB, onA]) {
        expectProblem(result, 429, 'RATE_LIMITED');
        expectRetryAfterWithin(result.response, WINDOW_SEC);
      }
      expect((await ownedDeviceRow(a.db, body.deviceId))!.owner_id).toBeNull();
    });

    it('claim: a burst of wrong codes split over both instances gets exactly the limit of codes checked; the rest are 429', async () => {
      const guesser = await aCustomer(a);
      const { body } = await aRegisteredDevice(b);

      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => claim(i % 2 === 0 ? a : b, guesser, { deviceId: body.deviceId, claimCode: aClaimCode() })));

      const statuses = results.map((result) => result.response.status).sort();
      expect(statuses).toEqual([...Array<number>(LIMIT).fill(401), ...Array<number>(12 - LIMIT).fill(429)]);
    });

    it('customer login: failures through A and B add up; then B refuses the right password with 429 and Retry-After, and no token is issued', async () => {
      const customer = await signUp(a);
      for (const instance of [a, b, b, a]) {
        expectProblem(await customerLogin(instance, customer.email, 'wrong-password'), 401, 'INVALID_CREDENTIALS');
      }

      const limited = await customerLogin(b, customer.email, customer.password);

      expectProblem(limited, 429, 'RATE_LIMITED');
      expectRetryAfterWithin(limited.response, WINDOW_SEC);
      expectProblem(await customerLogin(a, customer.email, customer.password), 429, 'RATE_LIMITED');
      expect(await userRefreshTokens(a, customer.userId)).toEqual([]);
    });

    it('customer login below the limit: three failures spread over both instances still let the right password in', async () => {
      const customer = await signUp(b);
      for (const instance of [a, b, a]) {
        expectProblem(await customerLogin(instance, customer.email, 'wrong-password'), 401, 'INVALID_CREDENTIALS');
      }

      expect((await customerLogin(b, customer.email, customer.password)).response.status).toBe(200);
    });

    it('device login: wrong secrets through A and B never lock the device out (no per-device limit for 256-bit secrets); the right secret logs in on both', async () => {
      const device = await registerDevice(b.api);
      for (const instance of [b, a, b, a, b, a]) {
        expectProblem(await deviceLogin(instance.api, device.deviceId, `${device.deviceSecret}x`), 401, 'INVALID_CREDENTIALS');
      }

      expect((await deviceLogin(a.api, device.deviceId, device.deviceSecret)).response.status).toBe(200);
      expect((await deviceLogin(b.api, device.deviceId, device.deviceSecret)).response.status).toBe(200);
    });
  });

  describe('refresh-token rotation and reuse detection span both instances', () => {
    /** As if REFRESH_REUSE_GRACE_SEC had passed since the rotations (refresh-reuse-grace.e2e-spec.ts waits for real). */
    const pastTheGrace = (table: 'user_refresh_tokens' | 'device_refresh_tokens', column: 'user_id' | 'device_id', subjectId: string) =>
      a.db.query(`UPDATE ${table} SET rotated_at = rotated_at - interval '1 hour' WHERE ${column} = $1 AND rotated_at IS NOT NULL`, [subjectId]);

    it('customer: rotated on A, repeated on B within the grace (same pair); after the grace the old token on B is refused, the whole family revoked and earlier access tokens rejected on both', async () => {
      const customer = await signUp(a);
      const first = (await customerLogin(a, customer.email, customer.password)).data!;
      const rotated = await customerRefresh(a, first.refreshToken);
      expect(rotated.response.status).toBe(200);
      const versionBefore = await tokenVersion(a, customer.userId);
      const repeat = await customerRefresh(b, first.refreshToken);
      expect({ status: repeat.response.status, data: repeat.data }).toEqual({ status: 200, data: rotated.data });
      await pastTheGrace('user_refresh_tokens', 'user_id', customer.userId);

      expectProblem(await customerRefresh(b, first.refreshToken), 401, 'INVALID_TOKEN');

      expect(await tokenVersion(a, customer.userId)).toBe(versionBefore + 1);
      const tokens = await userRefreshTokens(a, customer.userId);
      expect(tokens).toHaveLength(2);
      expect(tokens.every((token) => token.revoked_at !== null)).toBe(true);
      expectProblem(await customerRefresh(a, rotated.data!.refreshToken), 401, 'INVALID_TOKEN');
      for (const instance of [a, b]) expectProblem(await customerMe(instance, rotated.data!.accessToken), 401, 'UNAUTHORIZED');
    });

    it('customer: the same refresh token presented on A and B at once is rotated once; both answer the same pair, which keeps working', async () => {
      // Without the grace the second request would be reuse and voided every token (a retrying client lost
      // its session); within the reuse grace it is a repeat of the immediately previous token.
      const customer = await signUp(b);
      const pair = (await customerLogin(b, customer.email, customer.password)).data!;
      const versionBefore = await tokenVersion(a, customer.userId);

      const results = await Promise.all([customerRefresh(a, pair.refreshToken), customerRefresh(b, pair.refreshToken)]);

      expect(results.map((result) => result.response.status)).toEqual([200, 200]);
      expect(results[1].data).toEqual(results[0].data);
      expect(await tokenVersion(a, customer.userId)).toBe(versionBefore);
      const tokens = await userRefreshTokens(a, customer.userId);
      expect(tokens.map((token) => [token.rotated_at !== null, token.revoked_at])).toEqual([
        [true, null],
        [false, null],
      ]);
      for (const instance of [a, b]) expect((await customerMe(instance, results[0].data!.accessToken)).response.status).toBe(200);
      expect((await customerRefresh(a, results[0].data!.refreshToken)).response.status).toBe(200);
    });

    it('device: rotated on B, the old token presented on A after the grace is refused and every token of the device revoked; the secret still logs in', async () => {
      const device = await registerDevice(a.api);
      const rotated = await deviceRefresh(b.api, device.refreshToken);
      expect(rotated.response.status).toBe(200);
      await pastTheGrace('device_refresh_tokens', 'device_id', device.deviceId);

      expectProblem(await deviceRefresh(a.api, device.refreshToken), 401, 'INVALID_TOKEN');

      const tokens = await refreshTokenRows(a.db, device.deviceId);
      expect(tokens).toHaveLength(2);
      expect(tokens.every((token) => token.revoked_at !== null)).toBe(true);
      expectProblem(await deviceRefresh(b.api, rotated.data!.refreshToken), 401, 'INVALID_TOKEN');
      expect((await deviceLogin(b.api, device.deviceId, device.deviceSecret)).response.status).toBe(200);
    });
  });

  describe('the claim race spans both instances', () => {
    it('two customers claiming the same device at the same moment, one through A and one through B: exactly one wins, the other gets 409', async () => {
      for (let round = 0; round < 5; round++) {
        const [first, second] = [await aCustomer(a), await aCustomer(b)];
        const { body } = await aRegisteredDevice(a);

        const [viaA, viaB] = await Promise.all([
          claim(a, first, { deviceId: body.deviceId, claimCode: body.claimCode }),
          claim(b, second, { deviceId: body.deviceId, claimCode: body.claimCode }),
        ]);

        expect([viaA, viaB].map((result) => result.response.status).sort()).toEqual([200, 409]);
        const [winner, loser] = viaA.response.status === 200 ? [first, viaB] : [second, viaA];
        expectProblem(loser, 409, 'DEVICE_ALREADY_CLAIMED');
        expect((await ownedDeviceRow(a.db, body.deviceId))!.owner_id).toBe(winner.userId);
      }
    });
  });
});

describeWithRedis('two instances on one Redis: request budgets are counted once for both', () => {
  const keyPrefix = aRedisKeyPrefix();
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ a, b, close } = await startTwoInstances({
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: keyPrefix,
      TRUST_PROXY: '127.0.0.1',
      LOGIN_MAX_FAILURES_PER_ADDRESS: String(LIMIT),
      REGISTRATION_MAX_PER_ADDRESS: String(LIMIT),
      TELEMETRY_MAX_REQUESTS_PER_DEVICE: String(LIMIT),
    }));
  });
  afterAll(async () => {
    await close?.();
    await deleteRedisKeys(keyPrefix);
  });

  let serial = 0;
  const anAddress = () => ({ 'x-forwarded-for': `203.0.113.${++serial}` });

  it('device login: failures from one address through A and B add up; then that address gets 429 on both, another address logs in', async () => {
    const device = await registerDevice(a.api);
    const attacker = anAddress();
    for (const instance of [a, b, a, b]) {
      const { response } = await instance.api.POST('/api/v1/device/login', { body: { deviceId: device.deviceId, deviceSecret: 'wrong' }, headers: attacker });
      expect(response.status).toBe(401);
    }

    for (const instance of [a, b]) {
      const limited = await instance.api.POST('/api/v1/device/login', { body: { deviceId: device.deviceId, deviceSecret: device.deviceSecret }, headers: attacker });
      expectProblem(limited, 429, 'RATE_LIMITED');
      expectRetryAfterWithin(limited.response, 900);
    }
    const { response } = await b.api.POST('/api/v1/device/login', { body: { deviceId: device.deviceId, deviceSecret: device.deviceSecret }, headers: anAddress() });
    expect(response.status).toBe(200);
  });

  it('registration: new devices from one address through A and B add up; the next is 429 and not stored', async () => {
    const installer = anAddress();
    for (const instance of [a, b, a, b]) {
      expect((await instance.api.POST('/api/v1/device/register', { body: aRegistration(), headers: installer })).response.status).toBe(201);
    }
    const extra = aRegistration();

    const limited = await b.api.POST('/api/v1/device/register', { body: extra, headers: installer });

    expectProblem(limited, 429, 'RATE_LIMITED');
    expectRetryAfterWithin(limited.response, 3600);
    expect((await a.db.query('SELECT 1 FROM devices WHERE device_id = $1', [extra.deviceId])).rowCount).toBe(0);
  });

  it('telemetry: uploads of one device through A and B add up; the next is 429 on either and stores nothing', async () => {
    const device = await registerDevice(a.api);
    const record = (i: number) => ({ ts: new Date(Date.now() - 3_600_000 + i * 1000).toISOString(), metrics: { voltage: 13.2 } });
    for (const [i, instance] of [a, b, a, b].entries()) {
      expect((await ingest(instance.api, device.accessToken, [record(i)])).response.status).toBe(200);
    }

    for (const instance of [a, b]) {
      const limited = await ingest(instance.api, device.accessToken, [record(10)]);
      expectProblem(limited, 429, 'RATE_LIMITED');
      expectRetryAfterWithin(limited.response, 60);
    }
    expect((await a.db.query('SELECT 1 FROM telemetry WHERE device_id = $1', [device.deviceId])).rowCount).toBe(LIMIT);
  });
});

describe('an instance whose Redis does not answer: credential checks fail closed', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  /** Same database and keys, limits in memory: sets up the accounts and devices the other one is asked about. */
  let healthy: TestApp;
  let cut: TestApp;

  beforeAll(async () => {
    database = await createTestDatabase();
    const secrets = sharedSecrets();
    healthy = await startTestApp(database.url, secrets);
    // Port 1 on loopback: nothing listens there, every connection is refused.
    cut = await startTestApp(database.url, { ...secrets, REDIS_URL: 'redis://127.0.0.1:1', REDIS_KEY_PREFIX: aRedisKeyPrefix() });
  });
  afterAll(async () => {
    await cut?.close();
    await healthy?.close();
    await database?.drop();
  });

  const expectUnavailable = (result: { response: Response; error?: unknown }) => {
    const problem = expectProblem(result, 503, 'SERVICE_UNAVAILABLE');
    expect(problem.detail).toMatch(/rate-limit store/);
    expect(result.response.headers.get('retry-after')).toBe('5');
  };

  it('customer login and refresh: 503 SERVICE_UNAVAILABLE with Retry-After, and no token is issued or rotated', async () => {
    const customer = await signUp(healthy);
    const pair = (await customerLogin(healthy, customer.email, customer.password)).data!;

    expectUnavailable(await customerLogin(cut, customer.email, customer.password));
    expectUnavailable(await customerRefresh(cut, pair.refreshToken));

    expect(await userRefreshTokens(healthy, customer.userId)).toEqual([expect.objectContaining({ rotated_at: null, revoked_at: null })]);
    expect((await customerRefresh(healthy, pair.refreshToken)).response.status).toBe(200);
  });

  it('claim: 503 SERVICE_UNAVAILABLE and the device stays unowned', async () => {
    const customer = await aCustomer(healthy);
    const { body } = await aRegisteredDevice(healthy);

    expectUnavailable(await claim(cut, customer, { deviceId: body.deviceId, claimCode: body.claimCode }));

    expect((await ownedDeviceRow(healthy.db, body.deviceId))!.owner_id).toBeNull();
  });

  it('device login, refresh and the retry of a registration (each checks a secret or claim code): 503 SERVICE_UNAVAILABLE', async () => {
    const body = aRegistration();
    const device = await registerDevice(healthy.api, body);

    expectUnavailable(await cut.api.POST('/api/v1/device/register', { body }));
    expectUnavailable(await deviceLogin(cut.api, device.deviceId, device.deviceSecret));
    expectUnavailable(await deviceRefresh(cut.api, device.refreshToken));
    expect((await refreshTokenRows(healthy.db, device.deviceId)).every((token) => token.rotated_at === null && token.revoked_at === null)).toBe(true);
    expect((await deviceLogin(healthy.api, device.deviceId, device.deviceSecret)).response.status).toBe(200);
  });

  it('routes without a credential check keep working: a signed-in customer reads the account, a new gateway registers', async () => {
    const customer = await aCustomer(healthy);

    const { data, response } = await customerMe(cut, customer.accessToken);

    expect(response.status).toBe(200);
    expect(data?.userId).toBe(customer.userId);
    expect((await registerDevice(cut.api)).deviceSecret).toEqual(expect.any(String));
  });

  it('the request budgets fail open: a gateway uploads telemetry through the instance whose Redis is gone', async () => {
    const device = await registerDevice(cut.api);

    for (let i = 0; i < 3; i++) {
      const { data, response } = await ingest(cut.api, device.accessToken, [{ ts: new Date(Date.now() - 60_000 + i * 1000).toISOString(), metrics: { voltage: 13.2 } }]);
      expect(response.status).toBe(200);
      expect(data).toMatchObject({ accepted: 1 });
    }
  });
});
