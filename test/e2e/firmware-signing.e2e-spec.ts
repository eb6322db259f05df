import { createHash, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import type { components } from '@device-cloud/client';
import { firmwareManifest } from '../../src/modules/ota/domain/firmware-manifest.js';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { anAdmin, ADMIN_SETTINGS, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';

type PublishBody = components['schemas']['PublishFirmwareRequest'];

/** A key pair of the firmware team: the private key stays here, the public key goes to the service. */
function aTeamKey(): { privateKey: KeyObject; publicPem: string; publicRaw: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const publicPem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
  const publicRaw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
  return { privateKey, publicPem, publicRaw };
}

/** An image and the publish body for it, signed with `key` as `npm run firmware:sign` would. */
function aSignedRelease(key: KeyObject, keyId: string, overrides: { version?: string; hardwareId?: string; minFromVersion?: string } = {}) {
  const image = randomBytes(4096);
  const fields = { version: overrides.version ?? '0.3.1', hardwareId: overrides.hardwareId ?? null, sha256: createHash('sha256').update(image).digest('hex'), size: image.length, minFromVersion: overrides.minFromVersion ?? null };
  const signature = sign(null, Buffer.from(firmwareManifest(fields), 'utf8'), key).toString('base64');
  const body: PublishBody = {
    version: fields.version,
    ...(fields.hardwareId === null ? {} : { hardwareId: fields.hardwareId }),
    ...(fields.minFromVersion === null ? {} : { minFromVersion: fields.minFromVersion }),
    url: `https://firmware.example.com/gw/${fields.version}.bin`,
    sha256: fields.sha256,
    size: fields.size,
    signature,
    signingKeyId: keyId,
  };
  return { image, fields, body };
}

/**
 * Signed firmware releases, with FIRMWARE_REQUIRE_SIGNATURE on (its default outside development):
 * the firmware team's public keys, publishing verified against them, the manifest and signature a
 * gateway gets from /ota/latest, and revocation.
 */
describe('signed firmware releases', () => {
  let t: TestApp;
  let admin: SignedIn;
  const team = aTeamKey();

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, FIRMWARE_REQUIRE_SIGNATURE: 'true' });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const register = (keyId: string, publicKey: string, who = admin.headers) => t.api.POST('/api/v1/admin/firmware/signing-keys', { body: { keyId, publicKey }, headers: who });
  const publish = (body: PublishBody) => t.api.POST('/api/v1/admin/firmware', { body, headers: admin.headers });
  const revoke = (keyId: string) => t.api.POST('/api/v1/admin/firmware/signing-keys/{keyId}/revoke', { params: { path: { keyId } }, headers: admin.headers });
  const latest = (gateway: Registered) => t.api.GET('/api/v1/ota/latest', { headers: bearer(gateway.accessToken) });
  const releaseCount = async () => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM firmware_releases')).rows[0].n;
  const keyRows = async () => (await t.db.query<{ key_id: string; revoked: boolean }>('SELECT key_id, revoked_at IS NOT NULL AS revoked FROM firmware_signing_keys ORDER BY key_id')).rows;

  it('registers a public key (PEM or raw base64) once; the same again is 200, another under its id 409, a bad one 400; lists them', async () => {
    const first = await register('team-2026', team.publicPem);
    expect(first.response.status).toBe(201);
    expect(first.data).toEqual({ keyId: 'team-2026', publicKey: team.publicPem, fingerprint: expect.stringMatching(/^ed25519:[0-9a-f]{16}$/), createdAt: expect.any(String), revokedAt: null });
    // The same key again, as raw base64 this time: answered as it stands.
    const again = await register('team-2026', team.publicRaw);
    expect(again.response.status).toBe(200);
    expect(again.data).toEqual(first.data);
    expectProblem(await register('team-2026', aTeamKey().publicPem), 409, 'SIGNING_KEY_EXISTS');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const privatePem = team.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    for (const publicKey of [rsa, 'not a key', randomBytes(31).toString('base64'), privatePem]) {
      const problem = expectProblem(await register('other', publicKey), 400, 'VALIDATION_FAILED');
      expect(problem.errors).toEqual([expect.objectContaining({ field: 'publicKey' })]);
    }
    expectProblem(await register('bad key id!', team.publicPem), 400, 'VALIDATION_FAILED');
    expect(await keyRows()).toEqual([{ key_id: 'team-2026', revoked: false }]);

    const listed = await t.api.GET('/api/v1/admin/firmware/signing-keys', { headers: admin.headers });
    expect(listed.data).toEqual({ items: [first.data], nextCursor: null });
    const audit = await t.db.query<{ action: string }>("SELECT action FROM audit_log WHERE action LIKE 'firmware.signing_key%'");
    expect(audit.rows).toEqual([{ action: 'firmware.signing_key_added' }]);
  });

  it('publishes a release signed by a registered key, and the gateway gets the manifest, the signature and the key id to verify', async () => {
    const gateway = await registerDevice(t.api, { hardwareId: 'esp32-s3', firmwareVersion: '0.3.0' });
    const { image, fields, body } = aSignedRelease(team.privateKey, 'team-2026', { version: '0.3.2', hardwareId: 'esp32-s3', minFromVersion: '0.2.0' });
    const published = await publish(body);
    expect(published.response.status).toBe(201);
    expect(published.data).toMatchObject({ version: '0.3.2', signingKeyId: 'team-2026' });

    const { data } = await latest(gateway);
    const offer = data!.firmware!;
    expect(offer).toMatchObject({ version: '0.3.2', sha256: fields.sha256, size: image.length, signingKeyId: 'team-2026', signature: body.signature });
    expect(offer.manifest).toBe(`dcs-firmware-manifest/1\nversion=0.3.2\nhardware=esp32-s3\nsha256=${fields.sha256}\nsize=4096\nminVersion=0.2.0\n`);
    // What firmware does: verify with the public key it carries, over the manifest's bytes.
    expect(verify(null, Buffer.from(offer.manifest!, 'utf8'), team.publicPem, Buffer.from(offer.signature!, 'base64'))).toBe(true);
  });

  it('refuses, changing nothing: an unsigned release, a wrong signature, a key nobody registered, half a signature', async () => {
    const before = await releaseCount();
    const { body } = aSignedRelease(team.privateKey, 'team-2026', { version: '0.4.0' });
    const { signature, signingKeyId, ...unsigned } = body;
    expectProblem(await publish(unsigned), 400, 'FIRMWARE_SIGNATURE_REQUIRED');
    // Signed for another size, or by another key, or another field changed after signing.
    expectProblem(await publish({ ...body, size: body.size + 1 }), 400, 'FIRMWARE_SIGNATURE_INVALID');
    expectProblem(await publish({ ...body, version: '0.4.1' }), 400, 'FIRMWARE_SIGNATURE_INVALID');
    expectProblem(await publish({ ...body, signature: aSignedRelease(aTeamKey().privateKey, 'team-2026', { version: '0.4.0' }).body.signature }), 400, 'FIRMWARE_SIGNATURE_INVALID');
    expectProblem(await publish({ ...body, signingKeyId: 'nobody' }), 400, 'SIGNING_KEY_UNKNOWN');
    expectProblem(await publish({ ...unsigned, signature }), 400, 'VALIDATION_FAILED');
    expectProblem(await publish({ ...unsigned, signingKeyId }), 400, 'VALIDATION_FAILED');
    expectProblem(await publish({ ...body, signature: 'c2hvcnQ=' }), 400, 'VALIDATION_FAILED');
    // A line break in the hardware id would add a line to the manifest.
    expectProblem(await publish({ ...body, hardwareId: 'esp32\nsize=1' }), 400, 'VALIDATION_FAILED');
    expect(await releaseCount()).toBe(before);
  });

  it('revoking a key pauses the releases it signed, refuses new ones, and is answered the same again', async () => {
    const other = aTeamKey();
    expect((await register('team-2027', other.publicPem)).response.status).toBe(201);
    const gateway = await registerDevice(t.api, { hardwareId: 'esp32-c3', firmwareVersion: '1.0.0' });
    const byOld = await publish(aSignedRelease(team.privateKey, 'team-2026', { version: '1.1.0', hardwareId: 'esp32-c3' }).body);
    const byNew = await publish(aSignedRelease(other.privateKey, 'team-2027', { version: '1.0.5', hardwareId: 'esp32-c3' }).body);
    expect([byOld.response.status, byNew.response.status]).toEqual([201, 201]);
    expect((await latest(gateway)).data?.firmware?.version).toBe('1.1.0');

    const revoked = await revoke('team-2026');
    expect(revoked.response.status).toBe(200);
    expect(revoked.data).toMatchObject({ keyId: 'team-2026', revokedAt: expect.any(String) });
    // Every live release the key signed: the one just published and the one of the test before.
    expect(revoked.data!.pausedReleaseIds).toContain(byOld.data!.id);
    expect(revoked.data!.pausedReleaseIds).toHaveLength(2);
    const paused = await t.db.query<{ version: string; paused: boolean }>('SELECT version, paused FROM firmware_releases ORDER BY version');
    expect(paused.rows).toEqual([
      { version: '0.3.2', paused: true },
      { version: '1.0.5', paused: false },
      { version: '1.1.0', paused: true },
    ]);
    // The gateway falls back to what the live key signed.
    expect((await latest(gateway)).data?.firmware?.version).toBe('1.0.5');
    const before = await releaseCount();
    expectProblem(await publish(aSignedRelease(team.privateKey, 'team-2026', { version: '1.2.0' }).body), 400, 'SIGNING_KEY_REVOKED');
    expect(await releaseCount()).toBe(before);

    const again = await revoke('team-2026');
    expect(again.data).toEqual({ ...revoked.data, pausedReleaseIds: [] });
    expectProblem(await revoke('nobody'), 404, 'NOT_FOUND');
    expect(await keyRows()).toEqual([
      { key_id: 'team-2026', revoked: true },
      { key_id: 'team-2027', revoked: false },
    ]);
    // One key a page: the newest first, then the other, then no further page.
    const page = (cursor?: string) => t.api.GET('/api/v1/admin/firmware/signing-keys', { params: { query: { limit: 1, cursor } }, headers: admin.headers });
    const first = await page();
    const second = await page(first.data!.nextCursor!);
    expect([first.data!.items[0].keyId, second.data!.items[0].keyId]).toEqual(['team-2027', 'team-2026']);
    expect(second.data!.items[0].revokedAt).not.toBeNull();
    expect(second.data!.nextCursor).toBeNull();
  });
});
