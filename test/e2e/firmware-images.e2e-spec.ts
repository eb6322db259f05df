import { createHash, randomBytes } from 'node:crypto';
import type { components } from '@device-cloud/client';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { FirmwareImages } from '../../src/modules/ota/application/firmware-images.js';
import { FirmwareImageStore } from '../../src/modules/ota/domain/firmware-image.store.js';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { anAdmin, ADMIN_SETTINGS, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problems.js';
import { parseExposition, valueOf } from '../support/prometheus.js';

type Release = components['schemas']['FirmwareReleaseResponse'];

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/**
 * Images the service keeps: published without a url, uploaded in a stream, checked against the
 * release's size and SHA-256, and downloaded by the gateways it was offered to — whole, by range,
 * and resumed after a cut — from the database, 64 KiB at a time, written to the connection itself.
 */
describe('firmware images kept by the service', () => {
  let t: TestApp;
  let admin: SignedIn;
  /** 600 KiB and a bit: three pieces of 256 KiB, the last one short. */
  const image = randomBytes(600 * 1024 + 123);

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, FIRMWARE_MAX_BYTES: String(1024 * 1024), METRICS_PORT: '0' });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const publish = async (body: Partial<components['schemas']['PublishFirmwareRequest']> & { version: string }) => {
    const { data, response } = await t.api.POST('/api/v1/admin/firmware', { body: { sha256: sha256(image), size: image.length, ...body }, headers: admin.headers });
    expect(response.status).toBe(201);
    return data!;
  };
  const upload = (id: string, bytes: Uint8Array, contentType = 'application/octet-stream') =>
    t.api.PUT('/api/v1/admin/firmware/{id}/image', {
      params: { path: { id } },
      body: bytes as unknown as string,
      bodySerializer: (body: unknown) => body as string,
      headers: { ...admin.headers, 'content-type': contentType },
    });
  const download = (gateway: Registered, id: string, headers: Record<string, string> = {}) =>
    t.api.GET('/api/v1/device/firmware/{releaseId}/image', { params: { path: { releaseId: id } }, headers: { ...bearer(gateway.accessToken), ...headers }, parseAs: 'arrayBuffer' });
  const chunks = async (id: string) => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM firmware_image_chunks WHERE release_id = $1', [id])).rows[0].n;
  const offer = async (gateway: Registered) => (await t.api.GET('/api/v1/ota/latest', { headers: bearer(gateway.accessToken) })).data!.firmware;

  let release: Release;
  let gateway: Registered;

  it('a release published without a url waits for its image: not offered, nothing stored, its url the download path', async () => {
    gateway = await registerDevice(t.api, { hardwareId: 'hw-images', firmwareVersion: '1.0.0' });
    release = await publish({ version: '1.1.0', hardwareId: 'hw-images' });
    expect(release).toMatchObject({ url: `/api/v1/device/firmware/${release.id}/image`, awaitingImage: true });
    expect(await offer(gateway)).toBeNull();
    expect(await chunks(release.id)).toBe(0);
  });

  it('refuses an image that is not the release’s, cut short, too long or too large, of a release with a url, or not as bytes: nothing stored', async () => {
    const wrong = Buffer.from(image);
    wrong[wrong.length - 1] ^= 0xff;
    expectProblem(await upload(release.id, wrong), 400, 'FIRMWARE_IMAGE_MISMATCH');
    expectProblem(await upload(release.id, image.subarray(0, image.length - 1)), 400, 'FIRMWARE_IMAGE_MISMATCH');
    expectProblem(await upload(release.id, Buffer.concat([image, Buffer.from([0])])), 400, 'FIRMWARE_IMAGE_MISMATCH');
    expectProblem(await upload(release.id, randomBytes(1024 * 1024 + 1)), 413, 'PAYLOAD_TOO_LARGE');
    const external = await publish({ version: '1.0.5', hardwareId: 'hw-other', url: 'https://firmware.example.com/1.0.5.bin' });
    expectProblem(await upload(external.id, image), 409, 'FIRMWARE_IMAGE_NOT_HOSTED');
    expectProblem(await upload('00000000-0000-4000-8000-000000000000', image), 404, 'NOT_FOUND');
    expectProblem(await upload(release.id, Buffer.from('{"image":1}'), 'application/json'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectProblem(await t.api.POST('/api/v1/admin/firmware', { body: { version: '9.0.0', sha256: sha256(image), size: 1024 * 1024 + 1 }, headers: admin.headers }), 400, 'VALIDATION_FAILED');
    expect(await chunks(release.id)).toBe(0);
    expect((await t.db.query('SELECT awaiting_image FROM firmware_releases WHERE id = $1', [release.id])).rows).toEqual([{ awaiting_image: true }]);
  });

  it('stores the right image in 256 KiB pieces; the release is then offered with its download path', async () => {
    const { data, response } = await upload(release.id, image);
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ id: release.id, awaitingImage: false });
    const stored = await t.db.query<{ seq: number; bytes: number }>('SELECT seq, octet_length(data) AS bytes FROM firmware_image_chunks WHERE release_id = $1 ORDER BY seq', [release.id]);
    expect(stored.rows).toEqual([
      { seq: 0, bytes: 262144 },
      { seq: 1, bytes: 262144 },
      { seq: 2, bytes: image.length - 2 * 262144 },
    ]);
    // Uploading the same image again changes nothing a gateway sees.
    expect((await upload(release.id, image)).response.status).toBe(200);
    await eventually(async () => expect(await offer(gateway)).toMatchObject({ version: '1.1.0', url: `/api/v1/device/firmware/${release.id}/image`, sha256: sha256(image) }));
  });

  it('downloads whole with the SHA-256 as ETag, by range (206), and resumes after a cut with If-Range', async () => {
    const whole = await download(gateway, release.id);
    expect(whole.response.status).toBe(200);
    expect(whole.response.headers.get('etag')).toBe(`"${sha256(image)}"`);
    expect(whole.response.headers.get('accept-ranges')).toBe('bytes');
    expect(Buffer.from(whole.data!)).toEqual(image);
    // Written past Fastify, the answer still carries what the hooks set, and is counted.
    expect(whole.response.headers.get('content-type')).toBe('application/octet-stream');
    expect(whole.response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(whole.response.headers.get('x-request-id')).toMatch(/\S/);

    // A range across a piece boundary.
    const part = await download(gateway, release.id, { range: 'bytes=262000-262300' });
    expect(part.response.status).toBe(206);
    expect(part.response.headers.get('content-range')).toBe(`bytes 262000-262300/${image.length}`);
    expect(Buffer.from(part.data!)).toEqual(image.subarray(262000, 262301));
    const tail = await download(gateway, release.id, { range: 'bytes=-100' });
    expect(Buffer.from(tail.data!)).toEqual(image.subarray(image.length - 100));

    // Downloads at once share their reads' statements: each still gets its own bytes.
    const ranges = [[0, 599_999], [70_000, 400_000], [262_143, 262_144], [300_000, image.length - 1]];
    const together = await Promise.all(ranges.map(([first, last]) => download(gateway, release.id, { range: `bytes=${first}-${last}` })));
    for (const [index, [first, last]] of ranges.entries()) expect(Buffer.from(together[index].data!)).toEqual(image.subarray(first, last + 1));
    // One statement for several reads, of different pieces, in any order.
    const reads = [
      { releaseId: release.id, offset: 524_288 + 5, length: 1000, into: Buffer.alloc(1000) },
      { releaseId: release.id, offset: 0, length: 65_536, into: Buffer.alloc(65_536) },
      { releaseId: release.id, offset: 262_100, length: 44, into: Buffer.alloc(44) },
    ];
    await t.app.get(FirmwareImageStore).readInto(reads);
    for (const read of reads) expect(read.into).toEqual(image.subarray(read.offset, read.offset + read.length));
    await expect(t.app.get(FirmwareImageStore).readInto([{ releaseId: release.id, offset: 3 * 262_144, length: 10, into: Buffer.alloc(10) }])).rejects.toThrow('came back short');

    // A cut: the gateway read 100 kB of the answer and lost the connection, then resumes from there.
    const cut = await fetch(`${t.baseUrl}/api/v1/device/firmware/${release.id}/image`, { headers: bearer(gateway.accessToken) });
    const reader = cut.body!.getReader();
    const received: Uint8Array[] = [];
    let got = 0;
    while (got < 100_000) {
      const { value, done } = await reader.read();
      if (done) break;
      received.push(value);
      got += value.length;
    }
    await reader.cancel();
    const rest = await download(gateway, release.id, { range: `bytes=${got}-`, 'if-range': cut.headers.get('etag')! });
    expect(rest.response.status).toBe(206);
    const resumed = Buffer.concat([...received, Buffer.from(rest.data!)]);
    expect(sha256(resumed)).toBe(sha256(image));
    // Every download, the cut one included, gave its slot back.
    await eventually(() => expect(t.app.get(FirmwareImages).activeDownloads).toBe(0));
    const samples = parseExposition(await (await fetch(`http://127.0.0.1:${t.app.get(MetricsServer).address()!.port}/metrics`)).text());
    const answered = (status: string) => valueOf(samples, 'http_request_duration_seconds_count', { route: '/api/v1/device/firmware/:releaseId/image', method: 'GET', status_code: status });
    expect(answered('200')).toBeGreaterThanOrEqual(1);
    expect(answered('206')).toBeGreaterThanOrEqual(3);

    // If-Range naming another image: the whole of this one instead.
    const other = await download(gateway, release.id, { range: 'bytes=100-', 'if-range': '"0000"' });
    expect(other.response.status).toBe(200);
    expect(other.data!.byteLength).toBe(image.length);
  });

  it('416 for a range past the end; 404 for a device it was not offered to, an unknown release, a paused one', async () => {
    const past = await download(gateway, release.id, { range: `bytes=${image.length}-` });
    expectProblem(past, 416, 'RANGE_NOT_SATISFIABLE');
    expect(past.response.headers.get('content-range')).toBe(`bytes */${image.length}`);

    const stranger = await registerDevice(t.api, { hardwareId: 'hw-images', firmwareVersion: '1.0.0' });
    expectProblem(await download(stranger, release.id), 404, 'NOT_FOUND');
    expectProblem(await download(gateway, '00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND');
    expect((await t.api.PATCH('/api/v1/admin/firmware/{id}', { params: { path: { id: release.id } }, body: { paused: true }, headers: admin.headers })).response.status).toBe(200);
    expectProblem(await download(gateway, release.id), 404, 'NOT_FOUND');
  });
});
