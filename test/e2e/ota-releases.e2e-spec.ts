import { randomBytes } from 'node:crypto';
import { FirmwareVersion } from '../../src/shared/kernel/firmware-version.js';
import type { components, paths } from '@device-cloud/client';
import { aDeviceId, aLegacyRegistration, aRegistration, bearer, registerDevice, type RegisterBody } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem, fieldsOf } from '../support/problems.js';

type PublishBody = components['schemas']['PublishFirmwareRequest'];
type Release = components['schemas']['FirmwareReleaseResponse'];
type ChangeBody = components['schemas']['ChangeFirmwareRequest'];
type ListQuery = NonNullable<paths['/api/v1/admin/firmware']['get']['parameters']['query']>;
type Headers = { authorization: string };

interface Gateway {
  deviceId: string;
  hardwareId: string;
  accessToken: string;
}

interface ReleaseRow {
  id: string;
  version: string;
  hardware_id: string | null;
  channel: string;
  url: string;
  sha256: string;
  size: string;
  release_notes: string | null;
  rollout_percent: number;
  min_from_version: string | null;
  max_failure_percent: number | null;
  min_crash_free_percent: number | null;
  paused: boolean;
  auto_paused_at: Date | null;
  revoked: boolean;
  published_at: Date;
  updated_at: Date;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A valid release body. The default version 0.0.1 is below every gateway of this file (legacy
 * gateways run 0.1.3), so a release published for the admin API tests is never offered to anyone.
 */
function aFirmware(overrides: Partial<PublishBody> = {}): PublishBody {
  const version = overrides.version ?? '0.0.1';
  return { version, url: `https://fw.example.com/${randomBytes(4).toString('hex')}/${version}.bin`, sha256: randomBytes(32).toString('hex'), size: 1_572_864, ...overrides };
}

/** A hardware model no other test uses. */
const aHardwareId = () => `hw-${randomBytes(4).toString('hex')}`;

function expectedOffer(release: Release) {
  // Unsigned (the signed offer: firmware-signing.e2e-spec.ts): no manifest, signature or key.
  return { version: release.version, url: release.url, sha256: release.sha256, size: release.size, releaseNotes: release.releaseNotes, publishedAt: release.publishedAt, manifest: null, signature: null, signingKeyId: null, rollback: false };
}

describe('OTA releases', () => {
  let t: TestApp;
  let admin: SignedIn;
  let customer: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    [admin, customer] = await Promise.all([anAdmin(t), aCustomer(t)]);
  });
  afterAll(async () => {
    await t.close();
  });

  const publishAs = (who: Headers | undefined, body: PublishBody) => t.api.POST('/api/v1/admin/firmware', { body, headers: who });
  // `who` null: no Authorization header at all.
  const list = (query: ListQuery, who: Headers | null = admin.headers) => t.api.GET('/api/v1/admin/firmware', { params: { query }, headers: who ?? undefined });
  const change = (id: string, body: ChangeBody, who: Headers | null = admin.headers) =>
    t.api.PATCH('/api/v1/admin/firmware/{id}', { params: { path: { id } }, body, headers: who ?? undefined });
  const status = (id: string, who: Headers | null = admin.headers) =>
    t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id } }, headers: who ?? undefined });
  const latest = (gateway: Gateway, ifNoneMatch?: string) =>
    t.api.GET('/api/v1/ota/latest', { headers: { ...bearer(gateway.accessToken), ...(ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch }) } });
  const setChannel = (deviceId: string, otaChannel: 'stable' | 'beta', who: Headers = admin.headers) =>
    t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, body: { otaChannel }, headers: who });

  /** Publishes as the administrator; fails the test unless that answers 201. */
  async function publish(overrides: Partial<PublishBody> = {}): Promise<Release> {
    const body = aFirmware(overrides);
    const { data, response } = await publishAs(admin.headers, body);
    if (response.status !== 201 || !data) throw new Error(`publishing ${body.version} answered ${response.status}`);
    return data;
  }

  async function changed(id: string, body: ChangeBody): Promise<Release> {
    const { data, response } = await change(id, body);
    if (response.status !== 200 || !data) throw new Error(`changing ${id} answered ${response.status}`);
    return data;
  }

  /** A registered gateway; below 0.1.4 it registers the legacy way, without a claim code (no argon2). */
  async function aGateway(firmwareVersion = '0.1.3', overrides: Partial<RegisterBody> = {}): Promise<Gateway> {
    const build = FirmwareVersion.parse(firmwareVersion).requiresClaimCode() ? aRegistration : aLegacyRegistration;
    const body = build({ firmwareVersion, ...overrides });
    const registered = await registerDevice(t.api, body);
    return { deviceId: body.deviceId, hardwareId: body.hardwareId, accessToken: registered.accessToken };
  }

  async function offeredVersion(gateway: Gateway): Promise<string | null> {
    const { data, response } = await latest(gateway);
    expect(response.status).toBe(200);
    return data!.firmware?.version ?? null;
  }

  async function releaseRow(id: string): Promise<ReleaseRow | undefined> {
    const { rows } = await t.db.query<ReleaseRow>('SELECT * FROM firmware_releases WHERE id = $1', [id]);
    return rows[0];
  }

  async function releaseCount(): Promise<number> {
    const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM firmware_releases');
    return rows[0].n;
  }

  describe('POST /api/v1/admin/firmware', () => {
    it('201 with the defaults: stable, every hardware, 100 %, not paused or revoked; stored as answered', async () => {
      const body = aFirmware({ version: '0.0.1' });
      const before = Date.now();

      const { data, response } = await publishAs(admin.headers, body);

      expect(response.status).toBe(201);
      expect(data).toEqual({
        id: expect.stringMatching(UUID),
        version: '0.0.1',
        hardwareId: null,
        channel: 'stable',
        url: body.url,
        sha256: body.sha256,
        size: body.size,
        releaseNotes: null,
        rolloutPercent: 100,
        minFromVersion: null,
        maxFailurePercent: null,
        minCrashFreePercent: null,
        paused: false,
        autoPaused: false,
        revoked: false,
        publishedAt: expect.stringMatching(ISO),
        updatedAt: data!.publishedAt,
        signingKeyId: null,
        awaitingImage: false,
        targetTags: null,
        targetDeviceCount: null,
        startsAt: null,
        rollbackTo: null,
      });
      expect(Date.parse(data!.publishedAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(data!.publishedAt)).toBeLessThanOrEqual(Date.now() + 1000);
      expect(await releaseRow(data!.id)).toEqual({
        id: data!.id,
        version: '0.0.1',
        hardware_id: null,
        channel: 'stable',
        url: body.url,
        sha256: body.sha256,
        size: String(body.size),
        release_notes: null,
        rollout_percent: 100,
        min_from_version: null,
        max_failure_percent: null,
        min_crash_free_percent: null,
        paused: false,
        auto_paused_at: null,
        failure_budget_since: null,
        revoked: false,
        published_at: new Date(data!.publishedAt),
        updated_at: new Date(data!.publishedAt),
        signing_key_id: null,
        signature: null,
        manifest: null,
        awaiting_image: false,
        target_tags: null,
        target_device_ids: null,
        starts_at: null,
        rollback_to: null,
      });
    });

    it('201 with every field given; an upper-case sha256 is stored lower-case', async () => {
      const hardwareId = aHardwareId();
      const sha256 = randomBytes(32).toString('hex');
      const body = aFirmware({
        version: '0.0.2',
        hardwareId,
        channel: 'beta',
        sha256: sha256.toUpperCase(),
        size: 2_147_483_647,
        releaseNotes: 'Fixes the Wi-Fi reconnect loop.',
        rolloutPercent: 25,
        minFromVersion: '0.0.1',
        maxFailurePercent: 10,
      });

      const { data, response } = await publishAs(admin.headers, body);

      expect(response.status).toBe(201);
      expect(data).toEqual(
        expect.objectContaining({
          version: '0.0.2',
          hardwareId,
          channel: 'beta',
          url: body.url,
          sha256,
          size: 2_147_483_647,
          releaseNotes: 'Fixes the Wi-Fi reconnect loop.',
          rolloutPercent: 25,
          minFromVersion: '0.0.1',
          maxFailurePercent: 10,
          paused: false,
          autoPaused: false,
          revoked: false,
        }),
      );
      expect(await releaseRow(data!.id)).toEqual(
        expect.objectContaining({ sha256, hardware_id: hardwareId, channel: 'beta', rollout_percent: 25, min_from_version: '0.0.1', max_failure_percent: 10 }),
      );
    });

    it('the same (version, hardwareId, channel) again: 409 FIRMWARE_RELEASE_EXISTS and nothing stored; another channel or hardware is a new release', async () => {
      const hardwareId = aHardwareId();
      const first = await publish({ version: '0.0.3', hardwareId });
      const count = await releaseCount();

      expectProblem(await publishAs(admin.headers, aFirmware({ version: '0.0.3', hardwareId })), 409, 'FIRMWARE_RELEASE_EXISTS');
      expectProblem(await publishAs(admin.headers, aFirmware({ version: '0.0.3', hardwareId, channel: 'stable', rolloutPercent: 5 })), 409, 'FIRMWARE_RELEASE_EXISTS');

      expect(await releaseCount()).toBe(count);
      expect((await releaseRow(first.id))!.url).toBe(first.url);
      expect((await publishAs(admin.headers, aFirmware({ version: '0.0.3', hardwareId, channel: 'beta' }))).response.status).toBe(201);
      expect((await publishAs(admin.headers, aFirmware({ version: '0.0.3', hardwareId: aHardwareId() }))).response.status).toBe(201);
    });

    it('versions are the same release when they are numerically equal: 0.0.5 exists, 0.0.5.0 and 0.00.5 are 409', async () => {
      const hardwareId = aHardwareId();
      await publish({ version: '0.0.5', hardwareId });

      expectProblem(await publishAs(admin.headers, aFirmware({ version: '0.0.5.0', hardwareId })), 409, 'FIRMWARE_RELEASE_EXISTS');
      expectProblem(await publishAs(admin.headers, aFirmware({ version: '0.00.5', hardwareId })), 409, 'FIRMWARE_RELEASE_EXISTS');
    });

    it('a release for every hardware conflicts with the same one for every hardware, not with one for a specific hardware', async () => {
      await publish({ version: '0.0.4' });

      expectProblem(await publishAs(admin.headers, aFirmware({ version: '0.0.4' })), 409, 'FIRMWARE_RELEASE_EXISTS');
      expect((await publishAs(admin.headers, aFirmware({ version: '0.0.4', hardwareId: aHardwareId() }))).response.status).toBe(201);
    });

    it.each([
      ['version without a dot', { version: '1' }, 'version'],
      ['version with a v', { version: 'v1.2.0' }, 'version'],
      ['version with five parts', { version: '1.2.3.4.5' }, 'version'],
      ['an http url', { url: 'http://fw.example.com/a.bin' }, 'url'],
      ['an ftp url', { url: 'ftp://fw.example.com/a.bin' }, 'url'],
      ['a url without a scheme', { url: 'fw.example.com/a.bin' }, 'url'],
      ['sha256 of 63 hex digits', { sha256: 'a'.repeat(63) }, 'sha256'],
      ['sha256 of 65 hex digits', { sha256: 'a'.repeat(65) }, 'sha256'],
      ['sha256 not hex', { sha256: 'g'.repeat(64) }, 'sha256'],
      ['size 0', { size: 0 }, 'size'],
      ['size 1.5', { size: 1.5 }, 'size'],
      ['size as a string', { size: '1000' as unknown as number }, 'size'],
      ['channel alpha', { channel: 'alpha' as 'beta' }, 'channel'],
      ['rolloutPercent 101', { rolloutPercent: 101 }, 'rolloutPercent'],
      ['rolloutPercent -1', { rolloutPercent: -1 }, 'rolloutPercent'],
      ['rolloutPercent 50.5', { rolloutPercent: 50.5 }, 'rolloutPercent'],
      ['minFromVersion not a version', { minFromVersion: 'latest' }, 'minFromVersion'],
      ['maxFailurePercent 101', { maxFailurePercent: 101 }, 'maxFailurePercent'],
      ['an empty hardwareId', { hardwareId: '' }, 'hardwareId'],
      ['releaseNotes of 10 001 characters', { releaseNotes: 'x'.repeat(10_001) }, 'releaseNotes'],
      // No url at all is a release whose image the service keeps (firmware-images.e2e-spec.ts).
      ['a url of 2,049 characters', { url: `https://firmware.example.com/${'a'.repeat(2020)}.bin` }, 'url'],
      ['no sha256', { sha256: undefined }, 'sha256'],
      ['an unknown field', { signature: 'abc' } as Partial<PublishBody>, 'signature'],
    ] as Array<[string, Partial<PublishBody>, string]>)('%s: 400 VALIDATION_FAILED naming the field, nothing stored', async (_name, overrides, field) => {
      const count = await releaseCount();

      const problem = expectProblem(await publishAs(admin.headers, aFirmware({ version: '0.0.90', hardwareId: aHardwareId(), ...overrides })), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
      expect(await releaseCount()).toBe(count);
    });

    it('a customer: 403 FORBIDDEN; anonymous and a device token: 401; nothing stored', async () => {
      const gateway = await aGateway();
      const count = await releaseCount();

      expectProblem(await publishAs(customer.headers, aFirmware()), 403, 'FORBIDDEN');
      expectProblem(await publishAs(undefined, aFirmware()), 401, 'UNAUTHORIZED');
      expectProblem(await publishAs(bearer(gateway.accessToken), aFirmware()), 401, 'UNAUTHORIZED');

      expect(await releaseCount()).toBe(count);
    });
  });

  describe('GET /api/v1/admin/firmware', () => {
    let hardwareId: string;
    let published: Release[];

    beforeAll(async () => {
      hardwareId = aHardwareId();
      published = [];
      for (const [version, channel] of [
        ['0.0.10', 'stable'],
        ['0.0.11', 'beta'],
        ['0.0.12', 'stable'],
        ['0.0.13', 'beta'],
        ['0.0.14', 'stable'],
      ] as const) {
        published.push(await publish({ version, hardwareId, channel }));
      }
      await changed(published[2].id, { revoked: true });
    });

    /** Ids of the releases of this block in the order the list must give them: newest first, ties by id. */
    async function newestFirst(where: (release: Release) => boolean): Promise<string[]> {
      const { rows } = await t.db.query<{ id: string }>('SELECT id FROM firmware_releases WHERE hardware_id = $1 ORDER BY published_at DESC, id DESC', [hardwareId]);
      const wanted = new Set(published.filter(where).map((release) => release.id));
      return rows.map((row) => row.id).filter((id) => wanted.has(id));
    }

    async function allPages(query: ListQuery): Promise<{ pages: Release[][]; cursors: Array<string | null> }> {
      const pages: Release[][] = [];
      const cursors: Array<string | null> = [];
      let cursor: string | undefined;
      do {
        const { data, response } = await list(cursor === undefined ? query : { ...query, cursor });
        expect(response.status).toBe(200);
        pages.push(data!.items);
        cursors.push(data!.nextCursor);
        cursor = data!.nextCursor ?? undefined;
        expect(pages.length).toBeLessThan(100);
      } while (cursor !== undefined);
      return { pages, cursors };
    }

    it('newest first, without revoked releases by default; limit 2 pages through each release once', async () => {
      const { pages, cursors } = await allPages({ hardwareId, limit: 2 });

      expect(pages.map((page) => page.length)).toEqual([2, 2]);
      expect(cursors[0]).toEqual(expect.any(String));
      expect(cursors[1]).toBeNull();
      const ids = pages.flat().map((release) => release.id);
      expect(ids).toEqual(await newestFirst((release) => release !== published[2]));
      const publishedAt = pages.flat().map((release) => Date.parse(release.publishedAt));
      expect([...publishedAt].sort((a, b) => b - a)).toEqual(publishedAt);
      expect(pages[0][0]).toEqual(published[4]);
    });

    it('includeRevoked=true lists the revoked release too, marked revoked; false leaves it out', async () => {
      const withRevoked = await list({ hardwareId, includeRevoked: 'true' });
      const without = await list({ hardwareId, includeRevoked: 'false' });

      expect(withRevoked.data!.items.map((release) => release.id)).toEqual(await newestFirst(() => true));
      expect(withRevoked.data!.items.find((release) => release.id === published[2].id)!.revoked).toBe(true);
      expect(without.data!.items.map((release) => release.id)).toEqual(await newestFirst((release) => release !== published[2]));
    });

    it('filters by channel and by version', async () => {
      const beta = await list({ hardwareId, channel: 'beta' });
      const stable = await list({ hardwareId, channel: 'stable', includeRevoked: 'true' });
      const version = await list({ version: '0.0.13' });

      expect(beta.data!.items.map((release) => release.id)).toEqual(await newestFirst((release) => release.channel === 'beta'));
      expect(beta.data!.items.map((release) => release.version).sort()).toEqual(['0.0.11', '0.0.13']);
      expect(stable.data!.items.map((release) => release.version).sort()).toEqual(['0.0.10', '0.0.12', '0.0.14']);
      expect(version.data!.items.map((release) => release.id)).toEqual([published[3].id]);
    });

    it('a hardwareId nobody published for: an empty page', async () => {
      expect((await list({ hardwareId: aHardwareId() })).data).toEqual({ items: [], nextCursor: null });
    });

    it.each([
      ['limit 0', { limit: 0 }, 'limit'],
      ['limit 101', { limit: 101 }, 'limit'],
      ['channel alpha', { channel: 'alpha' as 'beta' }, 'channel'],
      ['includeRevoked yes', { includeRevoked: 'yes' as 'true' }, 'includeRevoked'],
      ['version latest', { version: 'latest' }, 'version'],
      ['a garbage cursor', { cursor: 'not a cursor!' }, 'cursor'],
      ['a cursor without a release id', { cursor: Buffer.from(`${new Date().toISOString()}|42`, 'utf8').toString('base64url') }, 'cursor'],
      // These reached PostgreSQL (500) or were read leniently (200).
      ['a cursor with a year PostgreSQL cannot store', { cursor: Buffer.from('-271821-04-20T00:00:00.000Z|00000000-0000-4000-8000-000000000000', 'utf8').toString('base64url') }, 'cursor'],
      ['a cursor with an instant read leniently ("1")', { cursor: Buffer.from('1|00000000-0000-4000-8000-000000000000', 'utf8').toString('base64url') }, 'cursor'],
    ] as Array<[string, ListQuery, string]>)('%s: 400 VALIDATION_FAILED naming the field', async (_name, query, field) => {
      expect(fieldsOf(expectProblem(await list(query), 400, 'VALIDATION_FAILED'))).toContain(field);
    });

    it('a customer: 403 FORBIDDEN; anonymous: 401', async () => {
      expectProblem(await list({}, customer.headers), 403, 'FORBIDDEN');
      expectProblem(await list({}, null), 401, 'UNAUTHORIZED');
    });
  });

  describe('PATCH /api/v1/admin/firmware/:id', () => {
    it('changes the rollout percent, pauses and revokes; the answer and the row agree, nothing else moves', async () => {
      const release = await publish({ hardwareId: aHardwareId(), version: '0.0.20', rolloutPercent: 10 });

      const rolled = await changed(release.id, { rolloutPercent: 60 });
      const paused = await changed(release.id, { paused: true });
      const revoked = await changed(release.id, { revoked: true, paused: false });

      expect(rolled).toEqual({ ...release, rolloutPercent: 60, updatedAt: expect.stringMatching(ISO) });
      expect(Date.parse(rolled.updatedAt)).toBeGreaterThanOrEqual(Date.parse(release.updatedAt));
      expect(paused).toEqual({ ...rolled, paused: true, updatedAt: expect.stringMatching(ISO) });
      expect(revoked).toEqual({ ...rolled, revoked: true, updatedAt: expect.stringMatching(ISO) });
      expect(await releaseRow(release.id)).toEqual(
        expect.objectContaining({ rollout_percent: 60, paused: false, revoked: true, updated_at: new Date(revoked.updatedAt), published_at: new Date(release.publishedAt) }),
      );
    });

    it('an unknown id: 404 NOT_FOUND', async () => {
      expectProblem(await change('5a0c7d8e-2b4f-4c1a-9e3d-7f6a5b4c3d2e', { paused: true }), 404, 'NOT_FOUND');
    });

    it('an id that is not a UUID: 400 naming id', async () => {
      expect(fieldsOf(expectProblem(await change('not-a-uuid', { paused: true }), 400, 'VALIDATION_FAILED'))).toEqual(['id']);
    });

    it.each([
      ['rolloutPercent 101', { rolloutPercent: 101 }, 'rolloutPercent'],
      ['rolloutPercent -5', { rolloutPercent: -5 }, 'rolloutPercent'],
      ['paused "yes"', { paused: 'yes' as unknown as boolean }, 'paused'],
      ['revoked 1', { revoked: 1 as unknown as boolean }, 'revoked'],
      ['a field that cannot be changed', { version: '9.9.9' } as ChangeBody, 'version'],
    ] as Array<[string, ChangeBody, string]>)('%s: 400 naming the field, the release unchanged', async (_name, body, field) => {
      const release = await publish({ hardwareId: aHardwareId(), version: '0.0.21' });
      const before = await releaseRow(release.id);

      expect(fieldsOf(expectProblem(await change(release.id, body), 400, 'VALIDATION_FAILED'))).toContain(field);

      expect(await releaseRow(release.id)).toEqual(before);
    });

    it('a customer: 403 FORBIDDEN; anonymous: 401; the release unchanged', async () => {
      const release = await publish({ hardwareId: aHardwareId(), version: '0.0.22' });
      const before = await releaseRow(release.id);

      expectProblem(await change(release.id, { paused: true }, customer.headers), 403, 'FORBIDDEN');
      expectProblem(await change(release.id, { paused: true }, null), 401, 'UNAUTHORIZED');

      expect(await releaseRow(release.id)).toEqual(before);
    });
  });

  describe('GET /api/v1/admin/firmware/:id/status', () => {
    it('a release nobody heard of: the release and every count 0', async () => {
      const release = await publish({ hardwareId: aHardwareId(), version: '0.0.30' });

      const { data, response } = await status(release.id);

      expect(response.status).toBe(200);
      expect(data).toEqual({
        release,
        devices: { offered: 0, downloading: 0, installing: 0, installed: 0, failed: 0, rolledBack: 0, stalled: 0, heldBack: 0 },
        health: { bootConfirmed: 0, crashed: 0, crashFreePercent: null, failurePercent: null },
        autoPaused: false,
        rollback: null,
      });
    });

    it('offered counts each device once, however often it polls', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.30' });
      const gateways = [await aGateway('0.1.3', { hardwareId }), await aGateway('0.1.3', { hardwareId }), await aGateway('0.1.3', { hardwareId: aHardwareId() })];

      for (const gateway of [...gateways, gateways[0], gateways[0]]) await latest(gateway);

      expect((await status(release.id)).data!.devices).toEqual({ offered: 2, downloading: 0, installing: 0, installed: 0, failed: 0, rolledBack: 0, stalled: 0, heldBack: 0 });
      const { rows } = await t.db.query<{ device_id: string; state: string }>('SELECT device_id, state FROM device_release_states WHERE release_id = $1 ORDER BY device_id', [
        release.id,
      ]);
      expect(rows).toEqual(
        [gateways[0], gateways[1]].map((gateway) => ({ device_id: gateway.deviceId, state: 'offered' })).sort((a, b) => a.device_id.localeCompare(b.device_id)),
      );
    });

    it('an unknown id: 404; not a UUID: 400; a customer: 403; anonymous: 401', async () => {
      const release = await publish({ hardwareId: aHardwareId(), version: '0.0.31' });

      expectProblem(await status('5a0c7d8e-2b4f-4c1a-9e3d-7f6a5b4c3d2e'), 404, 'NOT_FOUND');
      expect(fieldsOf(expectProblem(await status('12345'), 400, 'VALIDATION_FAILED'))).toEqual(['id']);
      expectProblem(await status(release.id, customer.headers), 403, 'FORBIDDEN');
      expectProblem(await status(release.id, null), 401, 'UNAUTHORIZED');
    });
  });

  describe('GET /api/v1/ota/latest: which release a gateway is offered', () => {
    it('the offer: updateAvailable, the version it runs and the release\'s download facts, nothing more', async () => {
      const gateway = await aGateway('0.1.9');
      const release = await publish({ hardwareId: gateway.hardwareId, version: '0.1.10', releaseNotes: 'Faster uploads.' });

      const { data, response } = await latest(gateway);

      expect(response.status).toBe(200);
      expect(data).toEqual({ updateAvailable: true, currentVersion: '0.1.9', firmware: expectedOffer(release) });
    });

    it('nothing newer: updateAvailable false, firmware null', async () => {
      const gateway = await aGateway();

      const { data, response } = await latest(gateway);

      expect(response.status).toBe(200);
      expect(data).toEqual({ updateAvailable: false, currentVersion: '0.1.3', firmware: null });
    });

    it('the highest version in numeric order: 0.1.10 over 0.1.9', async () => {
      const gateway = await aGateway();
      for (const version of ['0.1.9', '0.1.10', '0.1.5']) await publish({ hardwareId: gateway.hardwareId, version });

      expect(await offeredVersion(gateway)).toBe('0.1.10');
    });

    it('never a downgrade or the same version: a gateway on 0.1.10 is offered neither 0.1.9 nor 0.1.10.0 (= 0.1.10)', async () => {
      const gateway = await aGateway('0.1.10');
      for (const version of ['0.1.9', '0.1.10.0']) await publish({ hardwareId: gateway.hardwareId, version });

      expect((await latest(gateway)).data).toEqual({ updateAvailable: false, currentVersion: '0.1.10', firmware: null });
    });

    it('a release for other hardware is not offered', async () => {
      const gateway = await aGateway();
      await publish({ hardwareId: aHardwareId(), version: '0.9.0' });

      expect(await offeredVersion(gateway)).toBeNull();
    });

    it('paused and revoked releases are not offered, a lower live one is; resuming and un-revoking bring them back', async () => {
      const gateway = await aGateway();
      const low = await publish({ hardwareId: gateway.hardwareId, version: '0.1.5' });
      const middle = await publish({ hardwareId: gateway.hardwareId, version: '0.1.6' });
      const high = await publish({ hardwareId: gateway.hardwareId, version: '0.1.7' });
      expect(await offeredVersion(gateway)).toBe('0.1.7');

      await changed(high.id, { paused: true });
      expect(await offeredVersion(gateway)).toBe('0.1.6');
      await changed(middle.id, { revoked: true });
      expect(await offeredVersion(gateway)).toBe('0.1.5');
      await changed(low.id, { revoked: true });
      expect(await offeredVersion(gateway)).toBeNull();

      await changed(middle.id, { revoked: false });
      expect(await offeredVersion(gateway)).toBe('0.1.6');
      await changed(high.id, { paused: false });
      expect(await offeredVersion(gateway)).toBe('0.1.7');
    });

    it('channels: a stable gateway never gets beta; once its config says beta it gets beta and stable, whichever is higher', async () => {
      const gateway = await aGateway();
      await publish({ hardwareId: gateway.hardwareId, version: '0.1.5', channel: 'stable' });
      await publish({ hardwareId: gateway.hardwareId, version: '0.1.6', channel: 'beta' });
      expect(await offeredVersion(gateway)).toBe('0.1.5');

      expect((await setChannel(gateway.deviceId, 'beta')).response.status).toBe(200);
      expect(await offeredVersion(gateway)).toBe('0.1.6');

      await publish({ hardwareId: gateway.hardwareId, version: '0.1.7', channel: 'stable' });
      expect(await offeredVersion(gateway)).toBe('0.1.7');

      expect((await setChannel(gateway.deviceId, 'stable')).response.status).toBe(200);
      await publish({ hardwareId: gateway.hardwareId, version: '0.1.8', channel: 'beta' });
      expect(await offeredVersion(gateway)).toBe('0.1.7');
    });

    it('the owner switches the channel from the dashboard: the gateway gets beta from the next poll on', async () => {
      const owner = await aCustomer(t);
      const device = await aClaimedDevice(t, owner);
      const gateway = { deviceId: device.body.deviceId, hardwareId: device.body.hardwareId, accessToken: device.registered.accessToken };
      await publish({ hardwareId: gateway.hardwareId, version: '0.2.0', channel: 'beta' });
      expect(await offeredVersion(gateway)).toBeNull();

      const { data, response } = await setChannel(gateway.deviceId, 'beta', owner.headers);

      expect(response.status).toBe(200);
      expect(data!.config.otaChannel).toBe('beta');
      expect(await offeredVersion(gateway)).toBe('0.2.0');
    });

    it('minFromVersion: a gateway below it is offered the highest release without that condition instead', async () => {
      const hardwareId = aHardwareId();
      const older = await aGateway('0.1.2', { hardwareId });
      const atMinimum = await aGateway('0.1.3', { hardwareId });
      const newer = await aGateway('0.1.10', { hardwareId });
      await publish({ hardwareId, version: '0.1.11' });
      await publish({ hardwareId, version: '0.2.0', minFromVersion: '0.1.3' });
      await publish({ hardwareId, version: '0.3.0', minFromVersion: '0.1.10' });

      expect(await offeredVersion(older)).toBe('0.1.11');
      expect(await offeredVersion(atMinimum)).toBe('0.2.0');
      expect(await offeredVersion(newer)).toBe('0.3.0');
    });

    it('staged rollout: 0 % offers nobody, raising the percent only adds gateways, 100 % offers everybody; status counts the offers', async () => {
      const hardwareId = aHardwareId();
      const gateways: Gateway[] = [];
      for (let i = 0; i < 40; i++) gateways.push(await aGateway('0.1.3', { hardwareId, deviceId: aDeviceId('roll') }));
      const release = await publish({ hardwareId, version: '0.1.40', rolloutPercent: 0 });

      const offeredAt = async (): Promise<Set<string>> => {
        const offered = new Set<string>();
        for (const gateway of gateways) if ((await offeredVersion(gateway)) === '0.1.40') offered.add(gateway.deviceId);
        return offered;
      };
      const atZero = await offeredAt();
      await changed(release.id, { rolloutPercent: 30 });
      const at30 = await offeredAt();
      const at30Again = await offeredAt();
      const offeredAfter30 = (await status(release.id)).data!.devices.offered;
      await changed(release.id, { rolloutPercent: 70 });
      const at70 = await offeredAt();
      await changed(release.id, { rolloutPercent: 100 });
      const at100 = await offeredAt();

      expect(atZero.size).toBe(0);
      // 40 gateways at 30 %: none or all in would take odds below one in a million.
      expect(at30.size).toBeGreaterThan(0);
      expect(at30.size).toBeLessThan(40);
      expect(at30Again).toEqual(at30);
      expect([...at30].every((id) => at70.has(id))).toBe(true);
      expect(at70.size).toBeGreaterThanOrEqual(at30.size);
      expect(at100.size).toBe(40);
      expect(offeredAfter30).toBe(at30.size);
      expect((await status(release.id)).data!.devices.offered).toBe(40);
    });
  });

  describe('GET /api/v1/ota/latest: ETag', () => {
    const reportInstalled = (gateway: Gateway, fromVersion: string, toVersion: string) =>
      t.api.POST('/api/v1/ota/events', {
        body: { events: [{ ts: new Date().toISOString(), type: 'install_succeeded', fromVersion, toVersion }] },
        headers: bearer(gateway.accessToken),
      });

    it('200 with a strong ETag and no-cache; If-None-Match with it (strong or weak, or in a list): 304 with an empty body', async () => {
      const gateway = await aGateway();
      await publish({ hardwareId: gateway.hardwareId, version: '0.1.5' });

      const first = await latest(gateway);
      const etag = first.response.headers.get('etag')!;

      expect(etag).toMatch(/^"[^"]+"$/);
      expect(first.response.headers.get('cache-control')).toBe('private, no-cache');
      for (const header of [etag, `W/${etag}`, `"something-else", ${etag}`]) {
        const again = await latest(gateway, header);
        expect(again.response.status).toBe(304);
        expect(await again.response.text()).toBe('');
        expect(again.response.headers.get('etag')).toBe(etag);
      }
      const other = await latest(gateway, '"something-else"');
      expect(other.response.status).toBe(200);
      expect(other.data!.firmware!.version).toBe('0.1.5');
    });

    it('a release for other hardware changes nothing: still 304', async () => {
      const gateway = await aGateway();
      const etag = (await latest(gateway)).response.headers.get('etag')!;

      await publish({ hardwareId: aHardwareId(), version: '0.5.0' });

      expect((await latest(gateway, etag)).response.status).toBe(304);
    });

    it('the ETag changes with the answer: a new release, a pause, a new firmware version on the gateway', async () => {
      const gateway = await aGateway();
      const etags: string[] = [];
      const poll = async () => {
        const answer = await latest(gateway, etags.at(-1));
        expect(answer.response.status).toBe(200);
        etags.push(answer.response.headers.get('etag')!);
        return answer.data!;
      };

      expect(await poll()).toEqual({ updateAvailable: false, currentVersion: '0.1.3', firmware: null });
      const first = await publish({ hardwareId: gateway.hardwareId, version: '0.1.5' });
      expect(await poll()).toEqual({ updateAvailable: true, currentVersion: '0.1.3', firmware: expectedOffer(first) });
      const second = await publish({ hardwareId: gateway.hardwareId, version: '0.1.6' });
      expect(await poll()).toEqual({ updateAvailable: true, currentVersion: '0.1.3', firmware: expectedOffer(second) });
      await changed(second.id, { paused: true });
      expect(await poll()).toEqual({ updateAvailable: true, currentVersion: '0.1.3', firmware: expectedOffer(first) });
      expect((await reportInstalled(gateway, '0.1.3', '0.1.5')).response.status).toBe(200);
      expect(await poll()).toEqual({ updateAvailable: false, currentVersion: '0.1.5', firmware: null });
      await changed(second.id, { paused: false });
      expect(await poll()).toEqual({ updateAvailable: true, currentVersion: '0.1.5', firmware: expectedOffer(second) });

      etags.slice(1).forEach((etag, i) => expect(etag).not.toBe(etags[i]));
      // The same answer (0.1.5 offered to a gateway on 0.1.3) carries the same tag.
      expect(etags[3]).toBe(etags[1]);
      expect((await latest(gateway, etags.at(-1))).response.status).toBe(304);
    });

    it('without a device token: 401; with a customer token: 401', async () => {
      expectProblem(await t.api.GET('/api/v1/ota/latest', {}), 401, 'UNAUTHORIZED');
      expectProblem(await t.api.GET('/api/v1/ota/latest', { headers: customer.headers }), 401, 'UNAUTHORIZED');
    });
  });
});

describe('OTA releases for every hardware', () => {
  // Releases without hardwareId reach every gateway of the app, so they get an app of their own.
  let t: TestApp;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  async function publish(overrides: Partial<PublishBody>): Promise<Release> {
    const { data, response } = await t.api.POST('/api/v1/admin/firmware', { body: aFirmware(overrides), headers: admin.headers });
    if (response.status !== 201 || !data) throw new Error(`publishing answered ${response.status}`);
    return data;
  }

  async function offer(accessToken: string) {
    const { data, response } = await t.api.GET('/api/v1/ota/latest', { headers: bearer(accessToken) });
    expect(response.status).toBe(200);
    return data!.firmware;
  }

  it('a release without hardwareId is offered to every hardware; at an equal version the one built for the gateway\'s hardware wins', async () => {
    const special = await registerDevice(t.api, aLegacyRegistration({ hardwareId: 'hw-special' }));
    const plain = await registerDevice(t.api, aLegacyRegistration({ hardwareId: 'hw-plain' }));
    const genericLow = await publish({ version: '0.1.5' });

    expect((await offer(special.accessToken))?.url).toBe(genericLow.url);
    expect((await offer(plain.accessToken))?.url).toBe(genericLow.url);

    const specific = await publish({ version: '0.1.6', hardwareId: 'hw-special' });
    const generic = await publish({ version: '0.1.6' });

    expect((await offer(special.accessToken))?.url).toBe(specific.url);
    expect((await offer(plain.accessToken))?.url).toBe(generic.url);

    const newerGeneric = await publish({ version: '0.1.7' });
    expect((await offer(special.accessToken))?.url).toBe(newerGeneric.url);
  });
});
