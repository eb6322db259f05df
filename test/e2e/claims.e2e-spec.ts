import * as argon2 from 'argon2';
import { aClaimCode, aDeviceId, aLegacyRegistration, aRegistration, bearer, login, registerDevice } from '../support/builders.js';
import {
  aClaimedDevice,
  aCustomer,
  aRegisteredDevice,
  auditCount,
  auditRows,
  claim,
  ownedDeviceRow,
  type ClaimBody,
  type SignedIn,
} from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { snapshot } from '../support/database-state.js';
import { eventually } from '../support/eventually.js';
import { expectProblem, fieldsOf, type Problem } from '../support/problems.js';

/** Failure limits high enough that the refused attempts of the functional tests never turn into 429s. */
const SETTINGS = {
  CLAIM_MAX_FAILURES_PER_DEVICE: '1000',
  CLAIM_MAX_FAILURES_PER_CUSTOMER: '1000',
  LOGIN_MAX_FAILURES_PER_DEVICE: '1000',
  LOGIN_MAX_FAILURES_PER_ADDRESS: '100000',
};

const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The parts of a problem that must not tell one refusal from another (requestId and instance differ per call). */
function comparable(problem: Problem): Omit<Problem, 'requestId' | 'instance'> {
  const { requestId: _requestId, instance: _instance, ...rest } = problem;
  return rest;
}

describe('POST /api/v1/user/devices/claim', () => {
  let t: TestApp;
  let owner: SignedIn;
  let other: SignedIn;
  let unverified: SignedIn;

  beforeAll(async () => {
    t = await createTestApp(SETTINGS);
    [owner, other, unverified] = await Promise.all([aCustomer(t), aCustomer(t), aCustomer(t, { verified: false })]);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('1. the customer token comes first: 401', () => {
    it('without an Authorization header: 401 UNAUTHORIZED with a Bearer challenge, nothing claimed or audited', async () => {
      const { body } = await aRegisteredDevice(t);
      const audits = await auditCount(t.db);

      const result = await claim(t, undefined, { deviceId: body.deviceId, claimCode: body.claimCode });

      expectProblem(result, 401, 'UNAUTHORIZED');
      expect(result.response.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
      expect(await auditCount(t.db)).toBe(audits);
    });

    it('with a token that is not a JWT: 401 UNAUTHORIZED', async () => {
      const { body } = await aRegisteredDevice(t);

      expectProblem(await claim(t, { headers: bearer('not-a-jwt') }, { deviceId: body.deviceId, claimCode: body.claimCode }), 401, 'UNAUTHORIZED');
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
    });

    it("with a device's own access token: 401 UNAUTHORIZED", async () => {
      const { body, registered } = await aRegisteredDevice(t);

      expectProblem(await claim(t, { headers: bearer(registered.accessToken) }, { deviceId: body.deviceId, claimCode: body.claimCode }), 401, 'UNAUTHORIZED');
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
    });
  });

  describe('2. then the body: 400 VALIDATION_FAILED naming the field', () => {
    type Case = [string, Record<string, unknown>, string];
    const cases: Case[] = [
      ['deviceId missing', { claimCode: 'ABCD-EFGH' }, 'deviceId'],
      ['deviceId as a number', { deviceId: 42, claimCode: 'ABCD-EFGH' }, 'deviceId'],
      ['deviceId null', { deviceId: null, claimCode: 'ABCD-EFGH' }, 'deviceId'],
      ['deviceId empty', { deviceId: '', claimCode: 'ABCD-EFGH' }, 'deviceId'],
      ['deviceId of 65 characters', { deviceId: 'd'.repeat(65), claimCode: 'ABCD-EFGH' }, 'deviceId'],
      ['deviceId with a space', { deviceId: 'gw 1', claimCode: 'ABCD-EFGH' }, 'deviceId'],
      ['claimCode as a number', { deviceId: 'gw-1', claimCode: 12345678 }, 'claimCode'],
      ['claimCode null', { deviceId: 'gw-1', claimCode: null }, 'claimCode'],
      ['claimCode empty', { deviceId: 'gw-1', claimCode: '' }, 'claimCode'],
      ['claimCode of 65 characters', { deviceId: 'gw-1', claimCode: `${'A'.repeat(32)}-${'B'.repeat(32)}` }, 'claimCode'],
      ['deviceSecret of 129 characters', { deviceId: 'gw-1', deviceSecret: 's'.repeat(129) }, 'deviceSecret'],
      ['deviceSecret as a boolean', { deviceId: 'gw-1', deviceSecret: true }, 'deviceSecret'],
      ['deviceSecret empty', { deviceId: 'gw-1', deviceSecret: '' }, 'deviceSecret'],
      ['neither claimCode nor deviceSecret', { deviceId: 'gw-1' }, 'claimCode'],
      ['an unknown property', { deviceId: 'gw-1', claimCode: 'ABCD-EFGH', ownerId: 'me' }, 'ownerId'],
    ];

    it.each(cases)('%s', async (_name, body, field) => {
      const audits = await auditCount(t.db);

      const problem = expectProblem(await claim(t, owner, body as never), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
      expect(await auditCount(t.db)).toBe(audits);
    });

    it('an empty object names deviceId and the missing proof', async () => {
      const problem = expectProblem(await claim(t, owner, {} as never), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toEqual(expect.arrayContaining(['deviceId', 'claimCode']));
    });

    it('a JSON array instead of an object', async () => {
      expectProblem(await claim(t, owner, [] as never), 400, 'VALIDATION_FAILED');
    });

    it('a valid body of a registered device is not refused (the cases above fail on their own field)', async () => {
      const { body } = await aRegisteredDevice(t);

      expect((await claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode })).response.status).toBe(200);
    });
  });

  describe('3. then the e-mail verification (EMAIL_VERIFICATION_REQUIRED defaults to true)', () => {
    it('an unverified customer with the right code: 403 EMAIL_NOT_VERIFIED, the device stays unclaimed', async () => {
      const { body } = await aRegisteredDevice(t);
      const before = await snapshot(t.db, body.deviceId);

      expectProblem(await claim(t, unverified, { deviceId: body.deviceId, claimCode: body.claimCode }), 403, 'EMAIL_NOT_VERIFIED');

      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
    });

    it('the same token claims once the e-mail address is verified (the account decides, not the token)', async () => {
      const customer = await aCustomer(t, { verified: false });
      const { body } = await aRegisteredDevice(t);
      expectProblem(await claim(t, customer, { deviceId: body.deviceId, claimCode: body.claimCode }), 403, 'EMAIL_NOT_VERIFIED');

      // Changed behind the service's back: the change feed tells the session cache (CustomerSessions).
      await t.db.query('UPDATE users SET email_verified_at = now() WHERE id = $1', [customer.userId]);

      const { data, response } = await eventually(async () => {
        const answer = await claim(t, customer, { deviceId: body.deviceId, claimCode: body.claimCode });
        expect(answer.response.status).toBe(200);
        return answer;
      });
      expect(response.status).toBe(200);
      expect(data!.ownerId).toBe(customer.userId);
    });
  });

  describe('4. then the device must be known: 401 INVALID_CLAIM', () => {
    it('an unknown deviceId answers exactly like a wrong claim code', async () => {
      const { body } = await aRegisteredDevice(t);

      const unknown = expectProblem(await claim(t, owner, { deviceId: aDeviceId(), claimCode: body.claimCode }), 401, 'INVALID_CLAIM');
      const wrongCode = expectProblem(await claim(t, owner, { deviceId: body.deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');

      expect(comparable(unknown)).toEqual(comparable(wrongCode));
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
    });

    it('an unknown deviceId with only a deviceSecret: 401 INVALID_CLAIM, not a 400 about the missing code', async () => {
      expectProblem(await claim(t, owner, { deviceId: aDeviceId(), deviceSecret: 'some-secret' }), 401, 'INVALID_CLAIM');
    });

    it('a device that has not registered yet: 401 INVALID_CLAIM, and the same claim succeeds once it has', async () => {
      const body = aRegistration();
      const request: ClaimBody = { deviceId: body.deviceId, claimCode: body.claimCode };

      expectProblem(await claim(t, owner, request), 401, 'INVALID_CLAIM');
      expect(await ownedDeviceRow(t.db, body.deviceId)).toBeUndefined();

      await registerDevice(t.api, body);
      const { response } = await claim(t, owner, request);
      expect(response.status).toBe(200);
    });
  });

  describe('5. then ownership: a device claimed by another account is 409 DEVICE_ALREADY_CLAIMED whatever proof is sent', () => {
    const proofs: Array<[string, (device: { claimCode: string; deviceSecret: string }) => Omit<ClaimBody, 'deviceId'>]> = [
      ['the right claim code', (device) => ({ claimCode: device.claimCode })],
      ['a wrong claim code', () => ({ claimCode: aClaimCode() })],
      ['no claim code but the right device secret', (device) => ({ deviceSecret: device.deviceSecret })],
      ['no claim code and a wrong device secret', () => ({ deviceSecret: 'not-the-secret' })],
    ];

    it.each(proofs)('%s: 409, device and tokens unchanged', async (_name, proof) => {
      const { body, registered } = await aClaimedDevice(t, owner);
      const before = await snapshot(t.db, body.deviceId);

      const result = await claim(t, other, { deviceId: body.deviceId, ...proof({ claimCode: body.claimCode!, deviceSecret: registered.deviceSecret }) });

      expectProblem(result, 409, 'DEVICE_ALREADY_CLAIMED');
      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(owner.userId);
    });

    it('a legacy device claimed by another account, asked with a claim code instead of its secret: 409, not 400', async () => {
      const body = aLegacyRegistration();
      const registered = await registerDevice(t.api, body);
      expect((await claim(t, owner, { deviceId: body.deviceId, deviceSecret: registered.deviceSecret })).response.status).toBe(200);

      expectProblem(await claim(t, other, { deviceId: body.deviceId, claimCode: aClaimCode() }), 409, 'DEVICE_ALREADY_CLAIMED');
    });
  });

  describe('6. then the proof', () => {
    describe('a device registered with a claim code', () => {
      it('only a deviceSecret (even the right one): 400 CLAIM_CODE_REQUIRED naming claimCode', async () => {
        const { body, registered } = await aRegisteredDevice(t);

        const problem = expectProblem(await claim(t, owner, { deviceId: body.deviceId, deviceSecret: registered.deviceSecret }), 400, 'CLAIM_CODE_REQUIRED');

        expect(fieldsOf(problem)).toEqual(['claimCode']);
        expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
      });

      it('a wrong claim code: 401 INVALID_CLAIM', async () => {
        const { body } = await aRegisteredDevice(t);

        expectProblem(await claim(t, owner, { deviceId: body.deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
        expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
      });

      it.each(['ABCDEFGH', 'AB-CD', 'ABCD-EFG1'])('a claim code of the wrong shape (%s) is a wrong code: 401 INVALID_CLAIM, not 400', async (claimCode) => {
        const { body } = await aRegisteredDevice(t);

        expectProblem(await claim(t, owner, { deviceId: body.deviceId, claimCode }), 401, 'INVALID_CLAIM');
        expect((await auditRows(t.db, body.deviceId)).map((row) => row.outcome)).toEqual(['INVALID_CLAIM']);
      });

      it("another device's claim code: 401 INVALID_CLAIM", async () => {
        const [first, second] = await Promise.all([aRegisteredDevice(t), aRegisteredDevice(t)]);

        expectProblem(await claim(t, owner, { deviceId: first.body.deviceId, claimCode: second.body.claimCode }), 401, 'INVALID_CLAIM');
      });

      it('a wrong claim code together with the right deviceSecret: 401, the secret is never accepted', async () => {
        const { body, registered } = await aRegisteredDevice(t);

        expectProblem(
          await claim(t, owner, { deviceId: body.deviceId, claimCode: aClaimCode(), deviceSecret: registered.deviceSecret }),
          401,
          'INVALID_CLAIM',
        );
        expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
      });
    });

    describe('a legacy device (firmware 0.1.3, registered without a claim code)', () => {
      it('only a claimCode: 400 DEVICE_SECRET_REQUIRED naming deviceSecret', async () => {
        const body = aLegacyRegistration();
        await registerDevice(t.api, body);

        const problem = expectProblem(await claim(t, owner, { deviceId: body.deviceId, claimCode: aClaimCode() }), 400, 'DEVICE_SECRET_REQUIRED');

        expect(fieldsOf(problem)).toEqual(['deviceSecret']);
        expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
      });

      it('a wrong device secret: 401 INVALID_CLAIM', async () => {
        const body = aLegacyRegistration();
        await registerDevice(t.api, body);

        expectProblem(await claim(t, owner, { deviceId: body.deviceId, deviceSecret: 'not-the-secret' }), 401, 'INVALID_CLAIM');
        expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
      });

      it('a secret the device had before a registration retry replaced it: 401 INVALID_CLAIM', async () => {
        const body = aLegacyRegistration();
        const first = await registerDevice(t.api, body);
        await registerDevice(t.api, body);

        expectProblem(await claim(t, owner, { deviceId: body.deviceId, deviceSecret: first.deviceSecret }), 401, 'INVALID_CLAIM');
      });

      it('the right device secret: 200, claimed', async () => {
        const body = aLegacyRegistration();
        const registered = await registerDevice(t.api, body);

        const { data, response } = await claim(t, owner, { deviceId: body.deviceId, deviceSecret: registered.deviceSecret });

        expect(response.status).toBe(200);
        expect(data).toEqual({ deviceId: body.deviceId, ownerId: owner.userId, claimedAt: expect.stringMatching(ISO_INSTANT) });
        expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(owner.userId);
      });
    });
  });

  describe('7. success: 200 { deviceId, ownerId, claimedAt }', () => {
    it('stores the owner and the claim time, first owner sees all history', async () => {
      const { body } = await aRegisteredDevice(t);
      const before = Date.now();

      const { data, response } = await claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode });

      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(data).toEqual({ deviceId: body.deviceId, ownerId: owner.userId, claimedAt: expect.stringMatching(ISO_INSTANT) });
      const claimedAt = new Date(data!.claimedAt).getTime();
      expect(claimedAt).toBeGreaterThanOrEqual(before - 1000);
      expect(claimedAt).toBeLessThanOrEqual(Date.now() + 1000);
      const row = (await ownedDeviceRow(t.db, body.deviceId))!;
      expect(row.owner_id).toBe(owner.userId);
      expect(row.claimed_at!.toISOString()).toBe(data!.claimedAt);
      expect(row.visible_since).toBeNull();
    });

    it.each([
      ['ABCD-EFGH', 'abcd-efgh'],
      ['ABCD-EFGH', 'AbCd-eFgH'],
      ['quick-amber-falcon', 'QUICK-AMBER-FALCON'],
    ])('the claim code is case-insensitive: registered %s, claimed with %s', async (registeredCode, presentedCode) => {
      const { body } = await aRegisteredDevice(t, { claimCode: registeredCode });

      const { response } = await claim(t, owner, { deviceId: body.deviceId, claimCode: presentedCode });

      expect(response.status).toBe(200);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(owner.userId);
    });

    it('the device keeps its credentials: claiming changes neither secret nor tokens', async () => {
      const { body, registered } = await aRegisteredDevice(t);
      const before = await snapshot(t.db, body.deviceId);

      await claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode });

      const after = await snapshot(t.db, body.deviceId);
      expect(after.refreshTokens).toEqual(before.refreshTokens);
      expect({ ...after.device, owner_id: null, claimed_at: null }).toEqual(before.device);
      expect((await login(t.api, body.deviceId, registered.deviceSecret)).response.status).toBe(200);
    });
  });

  describe('seed section 3: ownership states', () => {
    it('registered, not claimed → claimed by that customer (200)', async () => {
      const { body } = await aRegisteredDevice(t);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();

      const { data, response } = await claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode });

      expect(response.status).toBe(200);
      expect(data!.ownerId).toBe(owner.userId);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(owner.userId);
    });

    it('claimed by this customer → the same claim again is 200 with the original claimedAt, nothing changes', async () => {
      const { body } = await aRegisteredDevice(t);
      const first = await claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode });
      const before = await snapshot(t.db, body.deviceId);

      const again = await claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode!.toLowerCase() });

      expect(again.response.status).toBe(200);
      expect(again.data).toEqual(first.data);
      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
    });

    it('the same customer claiming twice at the same moment: both 200 with one claimedAt', async () => {
      const { body } = await aRegisteredDevice(t);

      const results = await Promise.all([0, 1].map(() => claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode })));

      expect(results.map((result) => result.response.status)).toEqual([200, 200]);
      expect(results[0].data).toEqual(results[1].data);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.claimed_at!.toISOString()).toBe(results[0].data!.claimedAt);
    });

    it('claimed by another account → 409, state unchanged', async () => {
      const { body } = await aClaimedDevice(t, owner);
      const before = await snapshot(t.db, body.deviceId);

      expectProblem(await claim(t, other, { deviceId: body.deviceId, claimCode: body.claimCode }), 409, 'DEVICE_ALREADY_CLAIMED');

      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
    });
  });

  describe('precedence: the earlier rule wins', () => {
    it('no token and an invalid body: 401, not 400', async () => {
      expectProblem(await claim(t, undefined, { deviceId: 42 } as never), 401, 'UNAUTHORIZED');
    });

    it('a device token and an invalid body: 401, not 400', async () => {
      const registered = await registerDevice(t.api);

      expectProblem(await claim(t, { headers: bearer(registered.accessToken) }, {} as never), 401, 'UNAUTHORIZED');
    });

    it('an unverified customer and an invalid body: 400, not 403', async () => {
      expectProblem(await claim(t, unverified, { deviceId: 'gw-1' } as never), 400, 'VALIDATION_FAILED');
    });

    it('an unverified customer and an unknown device: 403, not 401', async () => {
      expectProblem(await claim(t, unverified, { deviceId: aDeviceId(), claimCode: aClaimCode() }), 403, 'EMAIL_NOT_VERIFIED');
    });

    it('an unverified customer and a device claimed by another account: 403, not 409', async () => {
      const { body } = await aClaimedDevice(t, owner);

      expectProblem(await claim(t, unverified, { deviceId: body.deviceId, claimCode: body.claimCode }), 403, 'EMAIL_NOT_VERIFIED');
    });

    it('an unknown device and no claim code: 401, not 400', async () => {
      expectProblem(await claim(t, owner, { deviceId: aDeviceId(), deviceSecret: 'x' }), 401, 'INVALID_CLAIM');
    });

    it('another owner and a wrong code: 409, not 401', async () => {
      const { body } = await aClaimedDevice(t, owner);

      expectProblem(await claim(t, other, { deviceId: body.deviceId, claimCode: aClaimCode() }), 409, 'DEVICE_ALREADY_CLAIMED');
    });

    it('another owner and a missing claim code: 409, not 400', async () => {
      const { body } = await aClaimedDevice(t, owner);

      expectProblem(await claim(t, other, { deviceId: body.deviceId, deviceSecret: 'x' }), 409, 'DEVICE_ALREADY_CLAIMED');
    });

    it('a missing claim code is reported before the secret is checked: 400, not 401', async () => {
      const { body } = await aRegisteredDevice(t);

      expectProblem(await claim(t, owner, { deviceId: body.deviceId, deviceSecret: 'wrong' }), 400, 'CLAIM_CODE_REQUIRED');
    });
  });

  describe('two customers claiming one device at the same moment', () => {
    const ROUNDS = 10;

    it(`exactly one wins and owns it, the other gets 409 (${ROUNDS} rounds)`, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const { body } = await aRegisteredDevice(t);
        const contenders = round % 2 === 0 ? [owner, other] : [other, owner];

        const results = await Promise.all(contenders.map((customer) => claim(t, customer, { deviceId: body.deviceId, claimCode: body.claimCode })));

        const statuses = results.map((result) => result.response.status).sort();
        expect({ round, statuses }).toEqual({ round, statuses: [200, 409] });
        const winner = results.findIndex((result) => result.response.status === 200);
        expectProblem(results[1 - winner], 409, 'DEVICE_ALREADY_CLAIMED');
        expect(results[winner].data!.ownerId).toBe(contenders[winner].userId);
        expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(contenders[winner].userId);
        const outcomes = (await auditRows(t.db, body.deviceId)).map((row) => [row.user_id, row.outcome]);
        expect(outcomes).toEqual(
          expect.arrayContaining([
            [contenders[winner].userId, 'CLAIMED'],
            [contenders[1 - winner].userId, 'DEVICE_ALREADY_CLAIMED'],
          ]),
        );
        expect(outcomes).toHaveLength(2);
      }
    }, 120_000);
  });

  describe('audit: every claim, release and refused attempt leaves a claim_audit row', () => {
    it('records who, which device, what, the outcome, when and from where', async () => {
      const { body, registered } = await aRegisteredDevice(t);
      const deviceId = body.deviceId;
      const before = Date.now();

      expectProblem(await claim(t, other, { deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
      expectProblem(await claim(t, unverified, { deviceId, claimCode: body.claimCode }), 403, 'EMAIL_NOT_VERIFIED');
      expectProblem(await claim(t, owner, { deviceId, deviceSecret: registered.deviceSecret }), 400, 'CLAIM_CODE_REQUIRED');
      expect((await claim(t, owner, { deviceId, claimCode: body.claimCode })).response.status).toBe(200);
      expectProblem(await claim(t, other, { deviceId, claimCode: body.claimCode }), 409, 'DEVICE_ALREADY_CLAIMED');
      expectProblem(await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId } }, headers: other.headers }), 404, 'NOT_FOUND');
      expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId } }, headers: owner.headers })).response.status).toBe(204);

      const rows = await auditRows(t.db, deviceId);
      expect(rows.map(({ user_id, device_id, action, outcome, client_address }) => ({ user_id, device_id, action, outcome, client_address }))).toEqual([
        { user_id: other.userId, device_id: deviceId, action: 'claim', outcome: 'INVALID_CLAIM', client_address: '127.0.0.1' },
        { user_id: unverified.userId, device_id: deviceId, action: 'claim', outcome: 'EMAIL_NOT_VERIFIED', client_address: '127.0.0.1' },
        { user_id: owner.userId, device_id: deviceId, action: 'claim', outcome: 'CLAIM_CODE_REQUIRED', client_address: '127.0.0.1' },
        { user_id: owner.userId, device_id: deviceId, action: 'claim', outcome: 'CLAIMED', client_address: '127.0.0.1' },
        { user_id: other.userId, device_id: deviceId, action: 'claim', outcome: 'DEVICE_ALREADY_CLAIMED', client_address: '127.0.0.1' },
        { user_id: other.userId, device_id: deviceId, action: 'release', outcome: 'NOT_FOUND', client_address: '127.0.0.1' },
        { user_id: owner.userId, device_id: deviceId, action: 'release', outcome: 'RELEASED', client_address: '127.0.0.1' },
      ]);
      for (const row of rows) {
        expect(row.at.getTime()).toBeGreaterThanOrEqual(before - 1000);
        expect(row.at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
      }
      expect(rows.map((row) => row.at.getTime())).toEqual([...rows.map((row) => row.at.getTime())].sort((a, b) => a - b));
    });

    it('records attempts on unknown devices and on legacy devices', async () => {
      const unknownId = aDeviceId();
      const legacy = aLegacyRegistration();
      await registerDevice(t.api, legacy);

      await claim(t, other, { deviceId: unknownId, claimCode: aClaimCode() });
      await claim(t, other, { deviceId: legacy.deviceId, claimCode: aClaimCode() });

      expect(await auditRows(t.db, unknownId)).toEqual([expect.objectContaining({ user_id: other.userId, action: 'claim', outcome: 'INVALID_CLAIM' })]);
      expect(await auditRows(t.db, legacy.deviceId)).toEqual([expect.objectContaining({ user_id: other.userId, action: 'claim', outcome: 'DEVICE_SECRET_REQUIRED' })]);
    });

    it('records a repeated claim by the owner as a success', async () => {
      const { body } = await aClaimedDevice(t, owner);

      await claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode });

      const outcomes = (await auditRows(t.db, body.deviceId)).map((row) => row.outcome);
      expect(outcomes).toHaveLength(2);
      expect(outcomes[0]).toBe('CLAIMED');
      expect(['CLAIMED', 'ALREADY_OWNED']).toContain(outcomes[1]);
    });
  });

  describe('GET /api/v1/user/devices', () => {
    it("lists only the caller's devices, most recently claimed first", async () => {
      const [me, them] = await Promise.all([aCustomer(t), aCustomer(t)]);
      const older = await aClaimedDevice(t, me, { firmwareVersion: '0.1.5' });
      const newer = await aClaimedDevice(t, me);
      const theirs = await aClaimedDevice(t, them);
      const unclaimed = await aRegisteredDevice(t);

      const { data, response } = await t.api.GET('/api/v1/user/devices', { headers: me.headers });

      expect(response.status).toBe(200);
      const expected = await Promise.all(
        [newer, older].map(async ({ body }) => ({
          deviceId: body.deviceId,
          hardwareId: body.hardwareId,
          firmwareVersion: body.firmwareVersion,
          claimedAt: (await ownedDeviceRow(t.db, body.deviceId))!.claimed_at!.toISOString(),
          lastSeenAt: null,
        })),
      );
      expect(data).toEqual({ items: expected, nextCursor: null });
      expect(data!.items.map((item) => item.deviceId)).not.toContain(theirs.body.deviceId);
      expect(data!.items.map((item) => item.deviceId)).not.toContain(unclaimed.body.deviceId);
    });

    it('is empty for a customer who owns nothing', async () => {
      const nobody = await aCustomer(t);

      const { data, response } = await t.api.GET('/api/v1/user/devices', { headers: nobody.headers });

      expect(response.status).toBe(200);
      expect(data).toEqual({ items: [], nextCursor: null });
    });

    it('pages like every list: limit and cursor in, items and nextCursor out, each device once, ties on claimedAt by deviceId', async () => {
      const me = await aCustomer(t);
      const devices = [];
      for (let i = 0; i < 5; i++) devices.push((await aClaimedDevice(t, me)).body.deviceId);
      // Three claimed in the same millisecond: the page boundary must fall between them without losing one.
      await t.db.query('UPDATE devices SET claimed_at = (SELECT claimed_at FROM devices WHERE device_id = $1) WHERE device_id = ANY($2)', [devices[1], devices.slice(1, 4)]);
      const { rows } = await t.db.query<{ device_id: string; claimed_at: Date }>('SELECT device_id, claimed_at FROM devices WHERE owner_id = (SELECT owner_id FROM devices WHERE device_id = $1)', [devices[0]]);
      const expected = rows
        .sort((a, b) => b.claimed_at.getTime() - a.claimed_at.getTime() || (a.device_id < b.device_id ? -1 : 1))
        .map((row) => row.device_id);

      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const { data, response } = await t.api.GET('/api/v1/user/devices', { params: { query: cursor === undefined ? { limit: 2 } : { limit: 2, cursor } }, headers: me.headers });
        expect(response.status).toBe(200);
        pages.push(data!.items.map((item) => item.deviceId));
        cursor = data!.nextCursor ?? undefined;
      } while (cursor !== undefined && pages.length < 10);

      expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
      expect(pages.flat()).toEqual(expected);
      expect(new Set(expected)).toEqual(new Set(devices));
    });

    it.each([
      ['limit', { limit: 0 }],
      ['limit', { limit: 101 }],
      ['cursor', { cursor: 'not-a-cursor' }],
      // A cursor of the dashboard's device list (a bare deviceId) is not one of this list.
      ['cursor', { cursor: Buffer.from('gw-0001').toString('base64url') }],
    ])('a bad %s: 400 VALIDATION_FAILED naming it', async (field, query) => {
      const problem = expectProblem(await t.api.GET('/api/v1/user/devices', { params: { query }, headers: owner.headers }), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
    });

    it('needs a customer token: 401', async () => {
      expectProblem(await t.api.GET('/api/v1/user/devices', {}), 401, 'UNAUTHORIZED');
    });
  });

  describe('DELETE /api/v1/user/devices/:deviceId (release)', () => {
    const release = (who: SignedIn | undefined, deviceId: string) =>
      t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId } }, headers: who?.headers });

    it('by the owner: 204, ownership cleared and the release time recorded', async () => {
      const { body } = await aClaimedDevice(t, owner);
      const before = Date.now();

      const { response } = await release(owner, body.deviceId);

      expect(response.status).toBe(204);
      expect(await response.text()).toBe('');
      const row = (await ownedDeviceRow(t.db, body.deviceId))!;
      expect(row).toEqual(expect.objectContaining({ owner_id: null, claimed_at: null, visible_since: null }));
      expect(row.last_released_at!.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(row.last_released_at!.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
      const { data } = await t.api.GET('/api/v1/user/devices', { headers: owner.headers });
      expect(data!.items.map((item) => item.deviceId)).not.toContain(body.deviceId);
    });

    it('the released device is claimable again with its code; the new owner sees history only from the release on', async () => {
      const { body } = await aClaimedDevice(t, owner);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.visible_since).toBeNull();
      expect((await release(owner, body.deviceId)).response.status).toBe(204);
      const releasedAt = (await ownedDeviceRow(t.db, body.deviceId))!.last_released_at!;

      const { data, response } = await claim(t, other, { deviceId: body.deviceId, claimCode: body.claimCode });

      expect(response.status).toBe(200);
      expect(data!.ownerId).toBe(other.userId);
      const row = (await ownedDeviceRow(t.db, body.deviceId))!;
      expect(row.owner_id).toBe(other.userId);
      expect(row.visible_since).toEqual(releasedAt);
      expect(row.claimed_at!.getTime()).toBeGreaterThanOrEqual(releasedAt.getTime());
    });

    it('a second release by the former owner: 404 NOT_FOUND', async () => {
      const { body } = await aClaimedDevice(t, owner);
      expect((await release(owner, body.deviceId)).response.status).toBe(204);

      expectProblem(await release(owner, body.deviceId), 404, 'NOT_FOUND');
    });

    it('by another customer: 404 NOT_FOUND, ownership unchanged', async () => {
      const { body } = await aClaimedDevice(t, owner);
      const before = await ownedDeviceRow(t.db, body.deviceId);

      expectProblem(await release(other, body.deviceId), 404, 'NOT_FOUND');

      expect(await ownedDeviceRow(t.db, body.deviceId)).toEqual(before);
    });

    it('of an unclaimed device: 404 NOT_FOUND', async () => {
      const { body } = await aRegisteredDevice(t);

      expectProblem(await release(owner, body.deviceId), 404, 'NOT_FOUND');
      expect((await ownedDeviceRow(t.db, body.deviceId))!.last_released_at).toBeNull();
    });

    it('of an unknown device: 404 NOT_FOUND', async () => {
      expectProblem(await release(owner, aDeviceId()), 404, 'NOT_FOUND');
    });

    it.each([
      ['with a space', 'a b'],
      ['of 65 characters', 'd'.repeat(65)],
      ['with a percent sign', 'gw%1'],
    ])('a deviceId %s in the path: 400 VALIDATION_FAILED naming deviceId', async (_name, deviceId) => {
      const problem = expectProblem(await release(owner, deviceId), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toEqual(['deviceId']);
    });

    it('without a token: 401, ownership unchanged', async () => {
      const { body } = await aClaimedDevice(t, owner);

      expectProblem(await release(undefined, body.deviceId), 401, 'UNAUTHORIZED');
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(owner.userId);
    });
  });

  describe('PUT /api/v1/device/claim-code (a legacy gateway sets its claim code once)', () => {
    const setClaimCode = (accessToken: string, claimCode: string) =>
      t.api.PUT('/api/v1/device/claim-code', { body: { claimCode }, headers: bearer(accessToken) });

    it('on a legacy device: 204, stored as argon2id; from then on the device is claimed with that code, not its secret', async () => {
      const body = aLegacyRegistration();
      const registered = await registerDevice(t.api, body);

      const { response } = await setClaimCode(registered.accessToken, 'brave-otter-lake');

      expect(response.status).toBe(204);
      const hash = (await ownedDeviceRow(t.db, body.deviceId))!.claim_code_hash!;
      expect(hash.startsWith('$argon2id$')).toBe(true);
      await expect(argon2.verify(hash, 'BRAVE-OTTER-LAKE')).resolves.toBe(true);
      expectProblem(await claim(t, owner, { deviceId: body.deviceId, deviceSecret: registered.deviceSecret }), 400, 'CLAIM_CODE_REQUIRED');
      const { response: claimed } = await claim(t, owner, { deviceId: body.deviceId, claimCode: 'BRAVE-OTTER-LAKE' });
      expect(claimed.status).toBe(200);
    });

    it('a second time: 409 CLAIM_CODE_ALREADY_SET, the first code stays', async () => {
      const body = aLegacyRegistration();
      const registered = await registerDevice(t.api, body);
      expect((await setClaimCode(registered.accessToken, 'FIRST-CODE-ONE')).response.status).toBe(204);
      const hash = (await ownedDeviceRow(t.db, body.deviceId))!.claim_code_hash;

      expectProblem(await setClaimCode(registered.accessToken, 'SECOND-CODE-TWO'), 409, 'CLAIM_CODE_ALREADY_SET');

      expect((await ownedDeviceRow(t.db, body.deviceId))!.claim_code_hash).toBe(hash);
      expectProblem(await claim(t, owner, { deviceId: body.deviceId, claimCode: 'SECOND-CODE-TWO' }), 401, 'INVALID_CLAIM');
      expect((await claim(t, owner, { deviceId: body.deviceId, claimCode: 'FIRST-CODE-ONE' })).response.status).toBe(200);
    });

    it('on a device registered with a claim code: 409 CLAIM_CODE_ALREADY_SET, hash unchanged', async () => {
      const { body, registered } = await aRegisteredDevice(t);
      const hash = (await ownedDeviceRow(t.db, body.deviceId))!.claim_code_hash;

      expectProblem(await setClaimCode(registered.accessToken, aClaimCode()), 409, 'CLAIM_CODE_ALREADY_SET');

      expect((await ownedDeviceRow(t.db, body.deviceId))!.claim_code_hash).toBe(hash);
    });

    it.each([
      ['in a single group', 'ABCDEFGH'],
      ['of fewer than 8 letters', 'AB-CD'],
      ['with a digit', 'ABCD-EFG1'],
      ['with a double hyphen', 'ABCD--EFGH'],
      ['empty', ''],
    ])('a claim code %s: 400 VALIDATION_FAILED naming claimCode, nothing stored', async (_name, claimCode) => {
      const body = aLegacyRegistration();
      const registered = await registerDevice(t.api, body);

      const problem = expectProblem(await setClaimCode(registered.accessToken, claimCode), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain('claimCode');
      expect((await ownedDeviceRow(t.db, body.deviceId))!.claim_code_hash).toBeNull();
    });

    it('with a customer token: 401, nothing stored', async () => {
      const body = aLegacyRegistration();
      await registerDevice(t.api, body);

      expectProblem(await setClaimCode(owner.accessToken, aClaimCode()), 401, 'UNAUTHORIZED');

      expect((await ownedDeviceRow(t.db, body.deviceId))!.claim_code_hash).toBeNull();
    });

    it('without a token: 401', async () => {
      expectProblem(await t.api.PUT('/api/v1/device/claim-code', { body: { claimCode: aClaimCode() } }), 401, 'UNAUTHORIZED');
    });
  });
});

describe('POST /api/v1/user/devices/claim with EMAIL_VERIFICATION_REQUIRED=false', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...SETTINGS, EMAIL_VERIFICATION_REQUIRED: 'false' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('an unverified customer claims: 200', async () => {
    const customer = await aCustomer(t, { verified: false });
    const { body } = await aRegisteredDevice(t);

    const { data, response } = await claim(t, customer, { deviceId: body.deviceId, claimCode: body.claimCode });

    expect(response.status).toBe(200);
    expect(data!.ownerId).toBe(customer.userId);
    expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(customer.userId);
    expect(await auditRows(t.db, body.deviceId)).toEqual([expect.objectContaining({ user_id: customer.userId, outcome: 'CLAIMED' })]);
  });

  it('the other rules still hold: a wrong code is 401 INVALID_CLAIM', async () => {
    const customer = await aCustomer(t, { verified: false });
    const { body } = await aRegisteredDevice(t);

    expectProblem(await claim(t, customer, { deviceId: body.deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
  });
});

describe('claim failure limit per device (CLAIM_MAX_FAILURES_PER_DEVICE=3)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...SETTINGS, CLAIM_MAX_FAILURES_PER_DEVICE: '3', CLAIM_MAX_FAILURES_PER_CUSTOMER: '1000', CLAIM_FAILURE_WINDOW_SEC: '900' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('after 3 wrong codes the next attempt is 429 RATE_LIMITED with Retry-After, even with the right code and for anyone', async () => {
    const [guesser, rightful] = await Promise.all([aCustomer(t), aCustomer(t)]);
    const { body } = await aRegisteredDevice(t);
    for (let i = 0; i < 3; i++) {
      expectProblem(await claim(t, guesser, { deviceId: body.deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
    }

    const byGuesser = await claim(t, guesser, { deviceId: body.deviceId, claimCode: body.claimCode });
    const byRightful = await claim(t, rightful, { deviceId: body.deviceId, claimCode: body.claimCode });

    for (const result of [byGuesser, byRightful]) {
      expectProblem(result, 429, 'RATE_LIMITED');
      const retryAfter = Number(result.response.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(900);
    }
    expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
    expect((await auditRows(t.db, body.deviceId)).map((row) => [row.user_id, row.outcome])).toEqual([
      [guesser.userId, 'INVALID_CLAIM'],
      [guesser.userId, 'INVALID_CLAIM'],
      [guesser.userId, 'INVALID_CLAIM'],
      [guesser.userId, 'RATE_LIMITED'],
      [rightful.userId, 'RATE_LIMITED'],
    ]);
  });

  it.each<[string, (device: { deviceSecret: string }) => Omit<ClaimBody, 'deviceId'>, boolean, string]>([
    ['a device secret (even the right one) for a device with a claim code', (device) => ({ deviceSecret: device.deviceSecret }), false, 'CLAIM_CODE_REQUIRED'],
    ['a claim code for a legacy device', () => ({ claimCode: aClaimCode() }), true, 'DEVICE_SECRET_REQUIRED'],
  ])('the wrong kind of proof keeps its 400 but counts like a wrong code: %s, 3 times, then 429 even for the right proof', async (_name, wrongKind, legacy, code) => {
    const [guesser, rightful] = await Promise.all([aCustomer(t), aCustomer(t)]);
    const body = legacy ? aLegacyRegistration() : aRegistration();
    const registered = await registerDevice(t.api, body);
    for (let i = 0; i < 3; i++) expectProblem(await claim(t, guesser, { deviceId: body.deviceId, ...wrongKind(registered) }), 400, code);

    const limited = await claim(t, rightful, { deviceId: body.deviceId, ...(legacy ? { deviceSecret: registered.deviceSecret } : { claimCode: body.claimCode }) });

    expectProblem(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBeNull();
    expect((await auditRows(t.db, body.deviceId)).map((row) => row.outcome)).toEqual([code, code, code, 'RATE_LIMITED']);
  });

  it('two wrong codes are not yet limited: the right code then claims', async () => {
    const customer = await aCustomer(t);
    const { body } = await aRegisteredDevice(t);
    for (let i = 0; i < 2; i++) {
      expectProblem(await claim(t, customer, { deviceId: body.deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
    }

    expect((await claim(t, customer, { deviceId: body.deviceId, claimCode: body.claimCode })).response.status).toBe(200);
  });

  it('a blocked device does not block another device for another customer', async () => {
    const [guesser, someoneElse] = await Promise.all([aCustomer(t), aCustomer(t)]);
    const [blocked, free] = await Promise.all([aRegisteredDevice(t), aRegisteredDevice(t)]);
    for (let i = 0; i < 3; i++) await claim(t, guesser, { deviceId: blocked.body.deviceId, claimCode: aClaimCode() });
    expectProblem(await claim(t, someoneElse, { deviceId: blocked.body.deviceId, claimCode: blocked.body.claimCode }), 429, 'RATE_LIMITED');

    const { response } = await claim(t, someoneElse, { deviceId: free.body.deviceId, claimCode: free.body.claimCode });

    expect(response.status).toBe(200);
  });

  it('the documented order: 403 for an unverified customer comes before 429, and 429 before 409', async () => {
    const [guesser, rightful, unverifiedCustomer] = await Promise.all([aCustomer(t), aCustomer(t), aCustomer(t, { verified: false })]);
    const { body } = await aClaimedDevice(t, rightful);
    for (let i = 0; i < 3; i++) {
      expectProblem(await claim(t, rightful, { deviceId: body.deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
    }

    expectProblem(await claim(t, unverifiedCustomer, { deviceId: body.deviceId, claimCode: body.claimCode }), 403, 'EMAIL_NOT_VERIFIED');
    expectProblem(await claim(t, guesser, { deviceId: body.deviceId, claimCode: body.claimCode }), 429, 'RATE_LIMITED');
    expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(rightful.userId);
  });

  it('a burst of parallel wrong guesses gets no more than the limit of codes checked; the rest are 429', async () => {
    const guesser = await aCustomer(t);
    const { body } = await aRegisteredDevice(t);

    const results = await Promise.all(Array.from({ length: 8 }, () => claim(t, guesser, { deviceId: body.deviceId, claimCode: aClaimCode() })));

    const statuses = results.map((result) => result.response.status);
    expect(statuses.filter((status) => status !== 401 && status !== 429)).toEqual([]);
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(3);
    const outcomes = (await auditRows(t.db, body.deviceId)).map((row) => row.outcome);
    expect(outcomes.filter((outcome) => outcome === 'INVALID_CLAIM').length).toBeLessThanOrEqual(3);
  });

  it('wrong legacy secrets count too', async () => {
    const customer = await aCustomer(t);
    const body = aLegacyRegistration();
    const registered = await registerDevice(t.api, body);
    for (let i = 0; i < 3; i++) {
      expectProblem(await claim(t, customer, { deviceId: body.deviceId, deviceSecret: `wrong-${i}` }), 401, 'INVALID_CLAIM');
    }

    expectProblem(await claim(t, customer, { deviceId: body.deviceId, deviceSecret: registered.deviceSecret }), 429, 'RATE_LIMITED');
  });
});

describe('claim failure limit per customer (CLAIM_MAX_FAILURES_PER_CUSTOMER=4)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...SETTINGS, CLAIM_MAX_FAILURES_PER_DEVICE: '100', CLAIM_MAX_FAILURES_PER_CUSTOMER: '4', CLAIM_FAILURE_WINDOW_SEC: '900' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('a customer guessing across devices is limited: 429 even on a device with its right code; others are not', async () => {
    const [guesser, someoneElse] = await Promise.all([aCustomer(t), aCustomer(t)]);
    const devices = await Promise.all(Array.from({ length: 5 }, () => aRegisteredDevice(t)));
    for (const device of devices.slice(0, 4)) {
      expectProblem(await claim(t, guesser, { deviceId: device.body.deviceId, claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
    }

    const limited = await claim(t, guesser, { deviceId: devices[4].body.deviceId, claimCode: devices[4].body.claimCode });

    expectProblem(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await ownedDeviceRow(t.db, devices[4].body.deviceId))!.owner_id).toBeNull();
    expect(await auditRows(t.db, devices[4].body.deviceId)).toEqual([expect.objectContaining({ user_id: guesser.userId, outcome: 'RATE_LIMITED' })]);
    // The guessed devices each saw one failure only: another customer claims them.
    expect((await claim(t, someoneElse, { deviceId: devices[0].body.deviceId, claimCode: devices[0].body.claimCode })).response.status).toBe(200);
    expect((await claim(t, someoneElse, { deviceId: devices[4].body.deviceId, claimCode: devices[4].body.claimCode })).response.status).toBe(200);
  });

  it('unknown deviceIds count against the customer too', async () => {
    const guesser = await aCustomer(t);
    const { body } = await aRegisteredDevice(t);
    for (let i = 0; i < 4; i++) {
      expectProblem(await claim(t, guesser, { deviceId: aDeviceId(), claimCode: aClaimCode() }), 401, 'INVALID_CLAIM');
    }

    expectProblem(await claim(t, guesser, { deviceId: body.deviceId, claimCode: body.claimCode }), 429, 'RATE_LIMITED');
  });
});

describe('claim failure window (CLAIM_FAILURE_WINDOW_SEC=1)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...SETTINGS, CLAIM_MAX_FAILURES_PER_DEVICE: '2', CLAIM_MAX_FAILURES_PER_CUSTOMER: '1000', CLAIM_FAILURE_WINDOW_SEC: '1' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('never blocks the rightful owner longer than the window', async () => {
    const [guesser, rightful] = await Promise.all([aCustomer(t), aCustomer(t)]);
    const { body } = await aRegisteredDevice(t);
    // Both wrong codes at once, so both failures land well inside one window.
    const guesses = await Promise.all([0, 1].map(() => claim(t, guesser, { deviceId: body.deviceId, claimCode: aClaimCode() })));
    for (const guess of guesses) expectProblem(guess, 401, 'INVALID_CLAIM');
    const blocked = await claim(t, rightful, { deviceId: body.deviceId, claimCode: body.claimCode });
    expectProblem(blocked, 429, 'RATE_LIMITED');
    expect(blocked.response.headers.get('retry-after')).toBe('1');

    t.clock.advanceMs(1200);

    const { data, response } = await claim(t, rightful, { deviceId: body.deviceId, claimCode: body.claimCode });
    expect(response.status).toBe(200);
    expect(data!.ownerId).toBe(rightful.userId);
  });
});
