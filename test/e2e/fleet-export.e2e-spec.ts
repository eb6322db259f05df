import { aClaimedDevice, aCustomer, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { ingest, iso } from '../support/telemetry.js';

/*
 * The fleet's latest values as CSV (GET /api/v1/dashboard/fleet/latest): the devices the device
 * list's filters select, every page of them, one line per device and latest metric; a bad filter
 * is a 400 before anything is sent; each export is one audit entry naming how many devices it held.
 */

const HEADER = 'deviceId,name,tags,hardwareId,firmwareVersion,online,lastSeenAt,batteryId,metric,ts,value';

describe('fleet export of the latest values', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const exportLatest = (who: SignedIn, query: Record<string, string | string[]> = {}) =>
    t.api.GET('/api/v1/dashboard/fleet/latest', { params: { query }, headers: who.headers, parseAs: 'text' });
  const exportEntries = async (userId: string) =>
    (await t.db.query<{ detail: Record<string, unknown> }>("SELECT detail FROM audit_log WHERE action = 'fleet.exported' AND actor_user_id = $1 ORDER BY id", [userId])).rows.map((row) => row.detail);
  const linesOf = (text: string) => {
    expect(text.endsWith('\r\n')).toBe(true);
    return text.slice(0, -2).split('\r\n');
  };

  it('writes a line per device and latest metric for the devices the filters select, and one audit entry', async () => {
    const owner = await aCustomer(t);
    const tagged = await aClaimedDevice(t, owner);
    const quiet = await aClaimedDevice(t, owner);
    await aClaimedDevice(t, owner);
    for (const device of [tagged, quiet]) {
      const labelled = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: device.body.deviceId } }, body: { name: 'Roof, east', tags: ['site-1'] }, headers: owner.headers });
      expect(labelled.response.status).toBe(200);
    }
    const at = Date.now() - 1000;
    const sent = await ingest(t.api, tagged.registered.accessToken, [{ ts: iso(at), metrics: { soc: 52.5, voltage: 13.1 } }]);
    expect(sent.response.status).toBe(200);

    const { data, response } = await exportLatest(owner, { tag: 'site-1' });

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const [header, ...rows] = linesOf(data!);
    expect(header).toBe(HEADER);
    const expected = [
      ...['soc', 'voltage'].map((metric) => ({ deviceId: tagged.body.deviceId, metric, value: metric === 'soc' ? '52.5' : '13.1' })),
      { deviceId: quiet.body.deviceId, metric: '', value: '' },
    ].sort((a, b) => (a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0));
    expect(rows.map((row) => row.split(','))).toEqual(
      expected.map(({ deviceId, metric, value }) => [
        deviceId,
        '"Roof',
        ' east"',
        'site-1',
        expect.any(String),
        expect.any(String),
        expect.stringMatching(/^(true|false)$/),
        expect.any(String),
        metric === '' ? '' : 'main',
        metric,
        metric === '' ? '' : iso(at),
        value,
      ]),
    );
    expect(await exportEntries(owner.userId)).toEqual([{ export: 'latest', devices: 2, complete: true, filters: { tag: ['site-1'] } }]);
  });

  it('pages through every device however many there are, in the list order', async () => {
    const owner = await aCustomer(t);
    // 450 devices of the owner's personal organization: more than two pages of the export.
    const ids = Array.from({ length: 450 }, (_, index) => `fleet-${owner.userId.slice(0, 8)}-${String(index).padStart(3, '0')}`);
    await t.db.query(
      `INSERT INTO devices (device_id, hardware_id, firmware_version, secret_hash, registered_at, credentials_issued_at, owner_id, claimed_at)
       SELECT id, 'esp32s3-test', '0.1.4', 'not-a-hash', now(), now(), $2, now() FROM unnest($1::text[]) AS id`,
      [ids, owner.userId],
    );

    const { data, response } = await exportLatest(owner);

    expect(response.status).toBe(200);
    const [, ...rows] = linesOf(data!);
    expect(rows.map((row) => row.split(',')[0])).toEqual([...ids].sort());
    expect(await exportEntries(owner.userId)).toEqual([{ export: 'latest', devices: 450, complete: true, filters: {} }]);
  });

  it('refuses a bad filter with a 400 naming it, and records nothing', async () => {
    const owner = await aCustomer(t);
    await aClaimedDevice(t, owner);

    const refused = expectProblem(await t.api.GET('/api/v1/dashboard/fleet/latest', { params: { query: { socBelow: 200 } }, headers: owner.headers }), 400, 'VALIDATION_FAILED');

    expect(fieldsOf(refused)).toEqual(['socBelow']);
    expect(await exportEntries(owner.userId)).toEqual([]);
  });

  it("exports one organization's devices with organizationId, and nothing of anyone else's", async () => {
    const owner = await aCustomer(t);
    const stranger = await aCustomer(t);
    await aClaimedDevice(t, stranger);
    const created = await t.api.POST('/api/v1/organizations', { body: { name: 'Export Co' }, headers: owner.headers });
    const organizationId = created.data!.organizationId;
    const device = await aRegisteredDevice(t);
    expect((await claim(t, owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
    await aClaimedDevice(t, owner);

    const { data } = await exportLatest(owner, { organizationId });
    const strangers = await exportLatest(stranger, { organizationId });

    expect(linesOf(data!).slice(1).map((row) => row.split(',')[0])).toEqual([device.body.deviceId]);
    expect(linesOf(strangers.data!)).toEqual([HEADER]);
  });
});
