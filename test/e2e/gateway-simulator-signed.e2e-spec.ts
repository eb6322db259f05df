import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { components } from '@device-cloud/client';
import { FirmwareImages, type OpenDownload } from '../../src/modules/ota/application/firmware-images.js';
import { firmwareManifest, type ManifestFields } from '../../src/modules/ota/domain/firmware-manifest.js';
import { DomainError } from '../../src/shared/domain-error.js';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { selfSignedCertificate, type Certificate } from '../support/certificates.js';
import { ADMIN_SETTINGS, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { firmwareServer, startSimulator, type Finished, type FirmwareServer } from '../support/gateway-simulator.js';

type PublishBody = components['schemas']['PublishFirmwareRequest'];

const sha256Of = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const signatureOf = (manifest: string, key: KeyObject) => sign(null, Buffer.from(manifest, 'utf8'), key);

/**
 * The publish body of `image` as version `version` at `url`, signed by `key` as `npm run firmware:sign` would; unsigned without a key.
 * A null url: the service keeps the image (uploaded next).
 */
function release(version: string, url: string | null, image: Buffer, signer?: { key: KeyObject; keyId: string }): PublishBody {
  const fields: ManifestFields = { version, hardwareId: null, sha256: sha256Of(image), size: image.length, minFromVersion: null };
  const body: PublishBody = { version, ...(url === null ? {} : { url }), sha256: fields.sha256, size: fields.size };
  return signer ? { ...body, signature: signatureOf(firmwareManifest(fields), signer.key).toString('base64'), signingKeyId: signer.keyId } : body;
}

/**
 * The simulator's --trust-key: a gateway that carries the firmware team's public key installs a
 * release only when its signature verifies with that key, its manifest fits the offer and the
 * gateway, and the image is the one the manifest names (docs/gateway.md, "Signed firmware"); any
 * other it reports as verify_failed, keeps its firmware and does not try again.
 */
describe('the gateway simulator with --trust-key against the real service', () => {
  const team = generateKeyPairSync('ed25519');
  const stranger = generateKeyPairSync('ed25519');
  let dir: string;
  let certificate: Certificate;
  let teamKeyFile: string;
  let t: TestApp;
  let admin: SignedIn;
  /** A gateway of the test's own, to see what /ota/latest offers after the store was changed behind the service's back. */
  let witness: Registered;
  let cdn: FirmwareServer | undefined;
  let releaseId: string | undefined;
  let images: FirmwareImages;
  let openDownload: FirmwareImages['openDownload'];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dcs-simulator-signed-'));
    certificate = selfSignedCertificate(dir, 'firmware-cdn');
    teamKeyFile = join(dir, 'team.pub.pem');
    writeFileSync(teamKeyFile, team.publicKey.export({ format: 'pem', type: 'spki' }));
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
    // Both keys are the service's: it takes a release either signed. Only the team's is built into the gateways.
    for (const [keyId, key] of [['team', team.publicKey], ['stranger', stranger.publicKey]] as const) {
      const { response } = await t.api.POST('/api/v1/admin/firmware/signing-keys', { body: { keyId, publicKey: key.export({ format: 'pem', type: 'spki' }).toString() }, headers: admin.headers });
      if (response.status !== 201) throw new Error(`registering the key ${keyId} answered ${response.status}`);
    }
    witness = await registerDevice(t.api, { firmwareVersion: '0.1.4' });
    images = t.app.get(FirmwareImages);
    openDownload = images.openDownload;
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // Each test's gateway runs 0.1.4 too: the release of a test before must not be offered to it.
  afterEach(async () => {
    images.openDownload = openDownload;
    await cdn?.close();
    cdn = undefined;
    if (releaseId) {
      const { response } = await t.api.PATCH('/api/v1/admin/firmware/{id}', { params: { path: { id: releaseId } }, body: { revoked: true }, headers: admin.headers });
      if (response.status !== 200) throw new Error(`revoking ${releaseId} answered ${response.status}`);
    }
    releaseId = undefined;
  });

  async function publish(body: PublishBody): Promise<string> {
    const { data, response } = await t.api.POST('/api/v1/admin/firmware', { body, headers: admin.headers });
    if (response.status !== 201 || !data) throw new Error(`publishing ${body.version} answered ${response.status}`);
    releaseId = data.id;
    return data.id;
  }

  /** What /ota/latest offers a gateway on 0.1.4 now. */
  async function offered(): Promise<components['schemas']['FirmwareOfferResponse'] | null> {
    const { data } = await t.api.GET('/api/v1/ota/latest', { headers: bearer(witness.accessToken) });
    return data?.firmware ?? null;
  }

  /**
   * One gateway on 0.1.4 trusting the team's key, from its first boot until `done` holds for it
   * (read from its stderr and the database), then stopped with Ctrl-C.
   */
  async function aGateway(done: (deviceId: string, stderr: string) => Promise<void>): Promise<Finished & { deviceId: string }> {
    const prefix = `sim-${randomBytes(3).toString('hex')}`;
    const deviceId = `${prefix}-0001`;
    const simulator = startSimulator(
      ['--url', t.baseUrl, '--gateways', '1', '--prefix', prefix, '--firmware', '0.1.4', '--trust-key', teamKeyFile, '--interval', '0.5', '--ramp', '0', '--install-sec', '0.2', '--verbose'],
      certificate,
    );
    try {
      await eventually(() => done(deviceId, simulator.stderr()), 15_000);
    } finally {
      simulator.child.kill('SIGINT');
    }
    return { ...(await simulator.finished), deviceId };
  }

  /** Refused, then offered the same release again at the next check, which it let be. */
  const refusedAndLeftAlone = (version: string) => async (deviceId: string, stderr: string) => {
    expect(stderr).toContain(`${deviceId}: verify_failed`);
    expect(stderr).toContain(`${deviceId}: offered ${version} again: tried once in this run, not retried`);
  };

  async function otaEvents(deviceId: string): Promise<Array<{ type: string; error_code: string | null; message: string | null }>> {
    const { rows } = await t.db.query<{ type: string; error_code: string | null; message: string | null }>('SELECT type, error_code, message FROM ota_events WHERE device_id = $1 ORDER BY ts, id', [
      deviceId,
    ]);
    return rows;
  }

  /** Uploads the image of a release published without a url, as an administrator does (PUT …/image). */
  async function upload(id: string, image: Buffer): Promise<void> {
    const { response } = await t.api.PUT('/api/v1/admin/firmware/{id}/image', {
      params: { path: { id } },
      body: image as unknown as string,
      bodySerializer: (body: unknown) => body as string,
      headers: { ...admin.headers, 'content-type': 'application/octet-stream' },
    });
    if (response.status !== 200) throw new Error(`uploading the image of ${id} answered ${response.status}`);
  }

  /** A download of an image the service keeps, as the service saw it: who, which release, and the first byte it was asked from (Range). */
  interface Served {
    deviceId: string;
    releaseId: string;
    from?: number;
    /** The service refused it (503) or cut it after this many bytes. */
    refused?: true;
    cutAfter?: number;
  }

  /**
   * Records every download of an image the service keeps. `nth(n)` shapes the n-th (0-based): refused with 503 and a
   * Retry-After of a second (every slot taken), or cut after that many bytes (the connection lost mid-way).
   */
  function watchDownloads(nth: (n: number) => 'refuse' | { cutAfter: number } | undefined = () => undefined): Served[] {
    const served: Served[] = [];
    images.openDownload = async (deviceId, id) => {
      const seen: Served = { deviceId, releaseId: id };
      const shape = nth(served.length);
      served.push(seen);
      if (shape === 'refuse') {
        seen.refused = true;
        throw new DomainError('SERVICE_UNAVAILABLE', 'unavailable', 'Every firmware download slot of this instance is taken.', { retryAfterSec: 1 });
      }
      const download: OpenDownload = await openDownload.call(images, deviceId, id);
      return {
        ...download,
        async *read(start, end) {
          seen.from = start;
          let sent = 0;
          for await (const bytes of download.read(start, end)) {
            yield bytes;
            sent += bytes.length;
            if (shape && sent >= shape.cutAfter) {
              seen.cutAfter = sent;
              throw new Error('the connection is lost');
            }
          }
        },
      };
    };
    return served;
  }

  async function firmwareOf(deviceId: string): Promise<string> {
    const { rows } = await t.db.query<{ firmware_version: string }>('SELECT firmware_version FROM devices WHERE device_id = $1', [deviceId]);
    return rows[0].firmware_version;
  }

  it('installs a release signed by the key it trusts, whose image is the one the manifest names', async () => {
    const image = randomBytes(32 * 1024);
    cdn = await firmwareServer(certificate, { '/fw/0.2.0.bin': image });
    const id = await publish(release('0.2.0', `${cdn.base}/fw/0.2.0.bin`, image, { key: team.privateKey, keyId: 'team' }));

    const { code, summary, deviceId } = await aGateway(async (deviceId) => expect((await otaEvents(deviceId)).map((event) => event.type)).toContain('boot_confirmed'));

    expect(code).toBe(0);
    expect((await otaEvents(deviceId)).map(({ type, error_code }) => [type, error_code])).toEqual(
      ['check', 'download_started', 'download_completed', 'install_started', 'install_succeeded', 'boot_confirmed'].map((type) => [type, null]),
    );
    expect(await firmwareOf(deviceId)).toBe('0.2.0');
    expect(summary.perGateway).toEqual([expect.objectContaining({ deviceId, firmwareVersion: '0.2.0' })]);
    expect(summary.ota).toMatchObject({ trustedKeys: 1, offers: 1, downloads: 1, installed: 1, failed: 0, refused: {} });
    expect(cdn.downloads).toEqual(['/fw/0.2.0.bin']);
    const status = await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id } }, headers: admin.headers });
    expect(status.data?.devices).toMatchObject({ installed: 1, failed: 0 });
  });

  it('refuses an image that is not the one signed (E_SHA_MISMATCH) and keeps its firmware', async () => {
    const signed = randomBytes(16 * 1024);
    const tampered = Buffer.from(signed);
    tampered[100] ^= 0xff;
    cdn = await firmwareServer(certificate, { '/fw/0.3.0.bin': tampered });
    await publish(release('0.3.0', `${cdn.base}/fw/0.3.0.bin`, signed, { key: team.privateKey, keyId: 'team' }));

    const { code, summary, deviceId } = await aGateway(refusedAndLeftAlone('0.3.0'));

    expect(code).toBe(0);
    expect((await otaEvents(deviceId)).map(({ type, error_code }) => [type, error_code])).toEqual([
      ['check', null],
      ['download_started', null],
      ['verify_failed', 'E_SHA_MISMATCH'],
    ]);
    expect(await firmwareOf(deviceId)).toBe('0.1.4');
    expect(summary.ota).toMatchObject({ offers: 1, downloads: 0, installed: 0, failed: 1, refused: { E_SHA_MISMATCH: 1 } });
    // Downloaded once, and not again though offered again.
    expect(cdn.downloads).toEqual(['/fw/0.3.0.bin']);
  });

  it("checks the image against the signed manifest, not the offer's url, sha256 and size beside it", async () => {
    const signed = randomBytes(16 * 1024);
    const planted = randomBytes(24 * 1024);
    cdn = await firmwareServer(certificate, { '/fw/0.3.1.bin': signed, '/planted/0.3.1.bin': planted });
    const id = await publish(release('0.3.1', `${cdn.base}/fw/0.3.1.bin`, signed, { key: team.privateKey, keyId: 'team' }));
    // Whoever can write the store points the release at another image, with its digest and size: the signature does not cover them.
    await t.db.query('UPDATE firmware_releases SET url = $2, sha256 = $3, size = $4 WHERE id = $1', [id, `${cdn.base}/planted/0.3.1.bin`, sha256Of(planted), planted.length]);
    await eventually(async () => expect(await offered()).toMatchObject({ url: `${cdn!.base}/planted/0.3.1.bin`, sha256: sha256Of(planted), size: planted.length }));

    const { code, summary, deviceId } = await aGateway(refusedAndLeftAlone('0.3.1'));

    expect(code).toBe(0);
    const events = await otaEvents(deviceId);
    expect(events.map(({ type, error_code }) => [type, error_code])).toEqual([
      ['check', null],
      ['download_started', null],
      ['verify_failed', 'E_SHA_MISMATCH'],
    ]);
    expect(events[2].message).toBe(`the image is larger than ${signed.length} bytes`);
    expect(await firmwareOf(deviceId)).toBe('0.1.4');
    expect(summary.ota).toMatchObject({ downloads: 0, installed: 0, refused: { E_SHA_MISMATCH: 1 } });
    expect(cdn.downloads).toEqual(['/planted/0.3.1.bin']);
  });

  it('refuses a release signed by a key it does not trust (E_SIGNATURE) before downloading anything', async () => {
    const image = randomBytes(16 * 1024);
    cdn = await firmwareServer(certificate, { '/fw/0.4.0.bin': image });
    await publish(release('0.4.0', `${cdn.base}/fw/0.4.0.bin`, image, { key: stranger.privateKey, keyId: 'stranger' }));

    const { code, summary, deviceId } = await aGateway(refusedAndLeftAlone('0.4.0'));

    expect(code).toBe(0);
    expect((await otaEvents(deviceId)).map(({ type, error_code }) => [type, error_code])).toEqual([
      ['check', null],
      ['verify_failed', 'E_SIGNATURE'],
    ]);
    expect(await firmwareOf(deviceId)).toBe('0.1.4');
    expect(summary.ota).toMatchObject({ offers: 1, downloads: 0, installed: 0, failed: 1, refused: { E_SIGNATURE: 1 } });
    expect(cdn.downloads).toEqual([]);
  });

  it('refuses a release whose manifest is an older release’s, signed by the trusted key but replayed (E_MANIFEST)', async () => {
    const image = randomBytes(16 * 1024);
    cdn = await firmwareServer(certificate, { '/fw/0.5.0.bin': image });
    const id = await publish(release('0.5.0', `${cdn.base}/fw/0.5.0.bin`, image, { key: team.privateKey, keyId: 'team' }));
    // A genuine manifest and signature, of 0.1.2: installing it would take the gateway back.
    const old = firmwareManifest({ version: '0.1.2', hardwareId: null, sha256: sha256Of(image), size: image.length, minFromVersion: null });
    await t.db.query('UPDATE firmware_releases SET manifest = $2, signature = $3 WHERE id = $1', [id, old, signatureOf(old, team.privateKey)]);
    await eventually(async () => expect((await offered())?.manifest).toBe(old));

    const { code, summary, deviceId } = await aGateway(refusedAndLeftAlone('0.5.0'));

    expect(code).toBe(0);
    const events = await otaEvents(deviceId);
    expect(events.map(({ type, error_code }) => [type, error_code])).toEqual([
      ['check', null],
      ['verify_failed', 'E_MANIFEST'],
    ]);
    expect(events[1].message).toBe('the manifest is for version 0.1.2, the offer for 0.5.0');
    expect(await firmwareOf(deviceId)).toBe('0.1.4');
    expect(summary.ota).toMatchObject({ downloads: 0, installed: 0, refused: { E_MANIFEST: 1 } });
    expect(cdn.downloads).toEqual([]);
  });

  it('refuses an unsigned release (E_UNSIGNED) before downloading anything', async () => {
    const image = randomBytes(16 * 1024);
    cdn = await firmwareServer(certificate, { '/fw/0.6.0.bin': image });
    await publish(release('0.6.0', `${cdn.base}/fw/0.6.0.bin`, image));

    const { code, summary, deviceId } = await aGateway(refusedAndLeftAlone('0.6.0'));

    expect(code).toBe(0);
    expect((await otaEvents(deviceId)).map(({ type, error_code }) => [type, error_code])).toEqual([
      ['check', null],
      ['verify_failed', 'E_UNSIGNED'],
    ]);
    expect(await firmwareOf(deviceId)).toBe('0.1.4');
    expect(summary.ota).toMatchObject({ offers: 1, downloads: 0, installed: 0, failed: 1, refused: { E_UNSIGNED: 1 } });
    expect(cdn.downloads).toEqual([]);
  });

  it('installs a signed release whose image the service keeps: downloaded from the service with its device token, nowhere else', async () => {
    const image = randomBytes(300 * 1024);
    // The same image on an image server as well (where the other tests' releases are): the gateway must not go there.
    cdn = await firmwareServer(certificate, { '/fw/0.7.0.bin': image });
    const id = await publish(release('0.7.0', null, image, { key: team.privateKey, keyId: 'team' }));
    await upload(id, image);
    await eventually(async () => expect(await offered()).toMatchObject({ version: '0.7.0', url: `/api/v1/device/firmware/${id}/image`, sha256: sha256Of(image), size: image.length }));
    const served = watchDownloads();

    const { code, summary, stderr, deviceId } = await aGateway(async (deviceId) => expect((await otaEvents(deviceId)).map((event) => event.type)).toContain('boot_confirmed'));

    expect(code).toBe(0);
    expect((await otaEvents(deviceId)).map(({ type, error_code }) => [type, error_code])).toEqual(
      ['check', 'download_started', 'download_completed', 'install_started', 'install_succeeded', 'boot_confirmed'].map((type) => [type, null]),
    );
    expect(await firmwareOf(deviceId)).toBe('0.7.0');
    expect(summary.perGateway).toEqual([expect.objectContaining({ deviceId, firmwareVersion: '0.7.0' })]);
    expect(summary.ota).toMatchObject({ trustedKeys: 1, offers: 1, downloads: 1, installed: 1, failed: 0, refused: {} });
    expect(stderr).toContain(`${deviceId}: offered 0.7.0 (signature and manifest hold): downloading /api/v1/device/firmware/${id}/image from the service`);
    // One download, whole, by this gateway (its device token named it), and no request anywhere else.
    expect(served).toEqual([{ deviceId, releaseId: id, from: 0 }]);
    expect(cdn.downloads).toEqual([]);
    const status = await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id } }, headers: admin.headers });
    expect(status.data?.devices).toMatchObject({ installed: 1, failed: 0 });
  });

  it('waits out a 503 for its Retry-After and resumes a download cut mid-way with Range and If-Range', async () => {
    const image = randomBytes(600 * 1024);
    const id = await publish(release('0.8.0', null, image, { key: team.privateKey, keyId: 'team' }));
    await upload(id, image);
    await eventually(async () => expect(await offered()).toMatchObject({ version: '0.8.0', url: `/api/v1/device/firmware/${id}/image` }));
    // Every slot taken at first; then the connection is lost after 192 KiB; then the rest.
    const served = watchDownloads((n) => (n === 0 ? 'refuse' : n === 1 ? { cutAfter: 192 * 1024 } : undefined));

    const { code, summary, stderr, deviceId } = await aGateway(async (deviceId) => expect((await otaEvents(deviceId)).map((event) => event.type)).toContain('boot_confirmed'));

    expect(code).toBe(0);
    expect((await otaEvents(deviceId)).map(({ type, error_code }) => [type, error_code])).toEqual(
      ['check', 'download_started', 'download_completed', 'install_started', 'install_succeeded', 'boot_confirmed'].map((type) => [type, null]),
    );
    expect(await firmwareOf(deviceId)).toBe('0.8.0');
    expect(summary.ota).toMatchObject({ downloads: 1, installed: 1, failed: 0, refused: {} });
    expect(served).toEqual([
      { deviceId, releaseId: id, refused: true },
      { deviceId, releaseId: id, from: 0, cutAfter: 192 * 1024 },
      { deviceId, releaseId: id, from: expect.any(Number) },
    ]);
    // Resumed from the bytes it had (If-Range held: a 206, not the whole image again), which the SHA-256 of the whole then checked.
    const resumedFrom = served[2].from!;
    expect(resumedFrom).toBeGreaterThan(0);
    expect(resumedFrom).toBeLessThanOrEqual(192 * 1024);
    expect(summary.answers).toMatchObject({ '503 SERVICE_UNAVAILABLE': 1, '200': expect.any(Number), '206': 1 });
    expect(stderr).toContain(`${deviceId}: download 0.8.0: 503, every download slot taken, retrying in`);
    expect(stderr).toContain(`${deviceId}: download 0.8.0: cut at ${resumedFrom} bytes`);
  });
});
