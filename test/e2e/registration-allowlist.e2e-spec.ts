import type pg from 'pg';
import type { components } from '@device-cloud/client';
import { aDeviceId, aRegistration, type RegisterBody } from '../support/builders.js';
import { ADMIN_SETTINGS, aCustomer, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { deviceRow, tableCounts } from '../support/database-state.js';
import { expectProblem, fieldsOf } from '../support/problems.js';

type ImportBody = components['schemas']['ImportAllowlistRequest'];

interface AllowlistRow {
  device_id: string;
  hardware_id: string;
  imported_by: string;
  imported_at: Date;
}

async function allowlistRows(db: pg.Pool): Promise<AllowlistRow[]> {
  const { rows } = await db.query<AllowlistRow>('SELECT * FROM registration_allowlist ORDER BY device_id');
  return rows;
}

async function allowlistRow(db: pg.Pool, deviceId: string): Promise<AllowlistRow | undefined> {
  const { rows } = await db.query<AllowlistRow>('SELECT * FROM registration_allowlist WHERE device_id = $1', [deviceId]);
  return rows[0];
}

describe('REGISTRATION_MODE=allowlist', () => {
  let t: TestApp;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({
      ...ADMIN_SETTINGS,
      REGISTRATION_MODE: 'allowlist',
      LOGIN_MAX_FAILURES_PER_DEVICE: '1000',
      LOGIN_MAX_FAILURES_PER_ADDRESS: '100000',
      // Room for an import of more than 5,000 JSON entries, so the entry limit answers and not the body limit.
      BODY_LIMIT_BYTES: '1048576',
    });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const register = (body: RegisterBody) => t.api.POST('/api/v1/device/register', { body });
  const importAllowlist = (who: { headers: { authorization: string } } | undefined, body: ImportBody) =>
    t.api.POST('/api/v1/admin/devices/allowlist', { body, headers: who?.headers });

  describe('POST /api/v1/device/register', () => {
    it('an unlisted device: 403 REGISTRATION_NOT_ALLOWED, nothing stored', async () => {
      const body = aRegistration();
      const before = await tableCounts(t.db);

      expectProblem(await register(body), 403, 'REGISTRATION_NOT_ALLOWED');

      expect(await deviceRow(t.db, body.deviceId)).toBeUndefined();
      expect(await tableCounts(t.db)).toEqual(before);
    });

    it('a listed deviceId/hardwareId pair: 201, the device is stored', async () => {
      const body = aRegistration();
      expect((await importAllowlist(admin, { entries: [{ deviceId: body.deviceId, hardwareId: body.hardwareId }] })).response.status).toBe(200);

      const { data, response } = await register(body);

      expect(response.status).toBe(201);
      expect(data!.deviceId).toBe(body.deviceId);
      expect(await deviceRow(t.db, body.deviceId)).toEqual(expect.objectContaining({ hardware_id: body.hardwareId }));
    });

    it('a listed deviceId with another hardwareId: 403 REGISTRATION_NOT_ALLOWED, nothing stored', async () => {
      const body = aRegistration();
      await importAllowlist(admin, { entries: [{ deviceId: body.deviceId, hardwareId: body.hardwareId }] });
      const before = await tableCounts(t.db);

      expectProblem(await register({ ...body, hardwareId: 'hw-not-listed' }), 403, 'REGISTRATION_NOT_ALLOWED');

      expect(await deviceRow(t.db, body.deviceId)).toBeUndefined();
      expect(await tableCounts(t.db)).toEqual(before);
    });

    it('a listed hardwareId under another deviceId: 403', async () => {
      const body = aRegistration();
      await importAllowlist(admin, { entries: [{ deviceId: body.deviceId, hardwareId: body.hardwareId }] });

      expectProblem(await register({ ...body, deviceId: aDeviceId() }), 403, 'REGISTRATION_NOT_ALLOWED');
    });

    it('a listed legacy device registers without a claim code', async () => {
      const body = aRegistration({ firmwareVersion: '0.1.3', claimCode: undefined });
      await importAllowlist(admin, { entries: [{ deviceId: body.deviceId, hardwareId: body.hardwareId }] });

      expect((await register(body)).response.status).toBe(201);
    });

    it('the allowlist does not relax validation: a listed device without its claim code is 400 CLAIM_CODE_REQUIRED', async () => {
      const body = aRegistration({ claimCode: undefined });
      await importAllowlist(admin, { entries: [{ deviceId: body.deviceId, hardwareId: body.hardwareId }] });

      expectProblem(await register(body), 400, 'CLAIM_CODE_REQUIRED');
      expect(await deviceRow(t.db, body.deviceId)).toBeUndefined();
    });
  });

  describe('POST /api/v1/admin/devices/allowlist', () => {
    it('JSON entries: 200 { imported: n }, stored with the importing admin and time', async () => {
      const entries = [aDeviceId(), aDeviceId()].map((deviceId) => ({ deviceId, hardwareId: `hw-${deviceId}` }));
      const before = Date.now();

      const { data, response } = await importAllowlist(admin, { entries });

      expect(response.status).toBe(200);
      expect(data).toEqual({ imported: 2 });
      for (const entry of entries) {
        const row = (await allowlistRow(t.db, entry.deviceId))!;
        expect(row).toEqual(expect.objectContaining({ device_id: entry.deviceId, hardware_id: entry.hardwareId, imported_by: admin.userId }));
        expect(row.imported_at.getTime()).toBeGreaterThanOrEqual(before - 1000);
        expect(row.imported_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
      }
    });

    it("CSV: 200, and every listed pair registers", async () => {
      const [first, second] = [aRegistration(), aRegistration()];
      const csv = `deviceId,hardwareId\n${first.deviceId},${first.hardwareId}\n${second.deviceId},${second.hardwareId}\n`;

      const { data, response } = await importAllowlist(admin, { csv });

      expect(response.status).toBe(200);
      expect(data).toEqual({ imported: 2 });
      expect((await register(first)).response.status).toBe(201);
      expect((await register(second)).response.status).toBe(201);
    });

    it('CSV exactly as in the example, with Windows line ends and spaces: 200', async () => {
      const deviceId = aDeviceId();
      const csv = `deviceId, hardwareId\r\n${deviceId} , hw-1\r\n`;

      const { data, response } = await importAllowlist(admin, { csv });

      expect(response.status).toBe(200);
      expect(data).toEqual({ imported: 1 });
      expect(await allowlistRow(t.db, deviceId)).toEqual(expect.objectContaining({ hardware_id: 'hw-1' }));
    });

    it('importing a listed deviceId again replaces its hardwareId', async () => {
      const body = aRegistration();
      await importAllowlist(admin, { entries: [{ deviceId: body.deviceId, hardwareId: 'hw-old-board' }] });

      const { data } = await importAllowlist(admin, { csv: `deviceId,hardwareId\n${body.deviceId},${body.hardwareId}\n` });

      expect(data).toEqual({ imported: 1 });
      expect((await allowlistRow(t.db, body.deviceId))!.hardware_id).toBe(body.hardwareId);
      expectProblem(await register({ ...body, hardwareId: 'hw-old-board' }), 403, 'REGISTRATION_NOT_ALLOWED');
      expect((await register(body)).response.status).toBe(201);
    });

    it.each([
      ['a wrong header', (id: string) => `device,hardware\n${id},hw-1\n`, 'csv'],
      ['no header line', (id: string) => `${id},hw-1\n`, 'csv'],
      ['a line with three cells', (id: string) => `deviceId,hardwareId\n${id},hw-1\n${id}-2,hw-2,extra\n`, 'csv.line3'],
      ['a line without a hardwareId', (id: string) => `deviceId,hardwareId\n${id},hw-1\n${id}-2\n`, 'csv.line3'],
      ['a deviceId with a space', (id: string) => `deviceId,hardwareId\ngw 1,hw-1\n${id},hw-2\n`, 'csv.line2'],
      ['a hardwareId of 129 characters', (id: string) => `deviceId,hardwareId\n${id},${'h'.repeat(129)}\n`, 'csv.line2'],
    ])('malformed CSV, %s: 400 VALIDATION_FAILED naming %s, nothing imported', async (_name, csvOf, field) => {
      const deviceId = aDeviceId();
      const before = await allowlistRows(t.db);

      const problem = expectProblem(await importAllowlist(admin, { csv: csvOf(deviceId) }), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
      expect(await allowlistRows(t.db)).toEqual(before);
    });

    it('5,000 CSV lines in one call: 200', async () => {
      const prefix = aDeviceId('max');
      const lines = Array.from({ length: 5000 }, (_, i) => `${prefix}-${i},hw-${i}`);

      const { data, response } = await importAllowlist(admin, { csv: `deviceId,hardwareId\n${lines.join('\n')}\n` });

      expect(response.status).toBe(200);
      expect(data).toEqual({ imported: 5000 });
    });

    it.each(['entries', 'csv'] as const)('more than 5,000 entries per call as %s: 400 VALIDATION_FAILED naming it, nothing imported', async (form) => {
      const prefix = aDeviceId('over');
      const entries = Array.from({ length: 5001 }, (_, i) => ({ deviceId: `${prefix}-${i}`, hardwareId: `hw-${i}` }));
      const body: ImportBody =
        form === 'entries' ? { entries } : { csv: `deviceId,hardwareId\n${entries.map((entry) => `${entry.deviceId},${entry.hardwareId}`).join('\n')}\n` };
      const before = (await allowlistRows(t.db)).length;

      const problem = expectProblem(await importAllowlist(admin, body), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(form);
      expect((await allowlistRows(t.db)).length).toBe(before);
    });

    it('every bad line is named at once', async () => {
      const problem = expectProblem(await importAllowlist(admin, { csv: 'deviceId,hardwareId\ngw-ok,hw-1\nbad line\ngw-ok-2,hw-2\n,hw-3\n' }), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toEqual(['csv.line3', 'csv.line5']);
    });

    it.each([
      ['neither entries nor csv', {}, 'entries'],
      ['entries not an array', { entries: 'gw-1,hw-1' }, 'entries'],
      ['an entry without a hardwareId', { entries: [{ deviceId: 'gw-1' }] }, 'entries.0.hardwareId'],
      ['an entry with a bad deviceId', { entries: [{ deviceId: 'gw 1', hardwareId: 'hw-1' }] }, 'entries.0.deviceId'],
      ['an entry with an unknown property', { entries: [{ deviceId: 'gw-1', hardwareId: 'hw-1', owner: 'x' }] }, 'entries.0.owner'],
      ['csv not a string', { csv: 42 }, 'csv'],
      ['an unknown property', { entries: [], mode: 'replace' }, 'mode'],
    ])('%s: 400 VALIDATION_FAILED naming %s, nothing imported', async (_name, body, field) => {
      const before = await allowlistRows(t.db);

      const problem = expectProblem(await importAllowlist(admin, body as never), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
      expect(await allowlistRows(t.db)).toEqual(before);
    });

    it('by a customer: 403 FORBIDDEN, nothing imported', async () => {
      const customer = await aCustomer(t);
      const deviceId = aDeviceId();

      expectProblem(await importAllowlist(customer, { entries: [{ deviceId, hardwareId: 'hw-1' }] }), 403, 'FORBIDDEN');

      expect(await allowlistRow(t.db, deviceId)).toBeUndefined();
    });

    it('without a token: 401, nothing imported', async () => {
      const deviceId = aDeviceId();

      expectProblem(await importAllowlist(undefined, { entries: [{ deviceId, hardwareId: 'hw-1' }] }), 401, 'UNAUTHORIZED');

      expect(await allowlistRow(t.db, deviceId)).toBeUndefined();
    });
  });
});

describe('REGISTRATION_MODE=open (the default)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('an unlisted device registers: 201', async () => {
    const body = aRegistration();

    const { response } = await t.api.POST('/api/v1/device/register', { body });

    expect(response.status).toBe(201);
    expect(await deviceRow(t.db, body.deviceId)).toBeDefined();
    expect(await allowlistRows(t.db)).toEqual([]);
  });
});
