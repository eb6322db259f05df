import { gzipSync } from 'node:zlib';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';
import { iso, MINUTE, telemetryRows, type TelemetryRecordBody } from '../support/telemetry.js';

/**
 * Gateways on metered or slow links may gzip their uploads (Content-Encoding: gzip). Any other
 * coding is refused with 415 and Accept-Encoding, never taken for malformed JSON; a compressed body
 * is held to the route's size limit both as sent and decompressed.
 */
describe('POST /api/v1/telemetry with Content-Encoding', () => {
  let t: TestApp;
  let device: Registered;

  /** A gateway's typical batch: 50 records a minute apart, four metrics each, with realistic noise. */
  const batch = (startMs: number): TelemetryRecordBody[] =>
    Array.from({ length: 50 }, (_, i) => ({
      ts: iso(startMs + i * MINUTE),
      batteryId: 'main',
      metrics: { soc: 80 - i * 0.37, voltage: 52.8 - i * 0.013 + (i % 3) * 0.004, current: -12.4 + (i % 7) * 0.31, temperature: 24.5 + (i % 5) * 0.1 },
    }));

  const send = (body: Buffer | string, headers: Record<string, string>) =>
    t.api.POST('/api/v1/telemetry', {
      body: { records: [] },
      bodySerializer: () => body as unknown as string,
      headers: { 'content-type': 'application/json', ...bearer(device.accessToken), ...headers },
    });

  beforeAll(async () => {
    t = await createTestApp();
    device = await registerDevice(t.api);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('stores a gzip-compressed batch as it stores a plain one, and a retry of it stores nothing twice', async () => {
    const records = batch(Date.now() - 2 * 60 * MINUTE);
    const plain = JSON.stringify({ records });
    const compressed = gzipSync(plain);
    // The figure docs/api.md gives: what gzip saves a gateway per 50-record batch.
    process.stdout.write(`50-record batch: ${Buffer.byteLength(plain)} bytes plain, ${compressed.length} gzip (${Math.round((100 * compressed.length) / Buffer.byteLength(plain))} %)\n`);
    expect(compressed.length).toBeLessThan(Buffer.byteLength(plain) / 3);

    const first = await send(compressed, { 'content-encoding': 'gzip' });
    expect(first.response.status).toBe(200);
    expect(first.data).toEqual({ accepted: 50, duplicates: 0, rejected: [] });
    const retried = await send(compressed, { 'content-encoding': 'gzip' });
    expect(retried.data).toEqual({ accepted: 0, duplicates: 50, rejected: [] });

    const rows = await telemetryRows(t.db, device.deviceId);
    expect(rows.map((row) => [row.ts.toISOString(), row.metrics])).toEqual(records.map((record) => [record.ts, record.metrics]));
  });

  it('takes identity and x-gzip as well', async () => {
    const records = batch(Date.now() - 5 * 60 * MINUTE).slice(0, 2);
    expect((await send(JSON.stringify({ records }), { 'content-encoding': 'identity' })).data).toEqual({ accepted: 2, duplicates: 0, rejected: [] });
    const more = batch(Date.now() - 8 * 60 * MINUTE).slice(0, 2);
    expect((await send(gzipSync(JSON.stringify({ records: more })), { 'content-encoding': 'x-gzip' })).data).toEqual({ accepted: 2, duplicates: 0, rejected: [] });
  });

  describe('refused, and nothing stored', () => {
    let before = 0;
    beforeEach(async () => {
      before = (await telemetryRows(t.db, device.deviceId)).length;
    });
    afterEach(async () => {
      expect((await telemetryRows(t.db, device.deviceId)).length).toBe(before);
    });

    it.each([['br'], ['deflate'], ['compress'], ['gzip, gzip'], ['zstd']])('Content-Encoding: %s is 415 with Accept-Encoding: gzip', async (coding) => {
      const answer = await send(gzipSync(JSON.stringify({ records: batch(Date.now() - 30 * 60 * MINUTE) })), { 'content-encoding': coding });
      expectProblem(answer, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(answer.response.headers.get('accept-encoding')).toBe('gzip');
    });

    it('a body that says gzip but is not is 400 MALFORMED_BODY naming gzip', async () => {
      const answer = await send(JSON.stringify({ records: batch(Date.now() - 30 * 60 * MINUTE) }), { 'content-encoding': 'gzip' });
      const problem = expectProblem(answer, 400, 'MALFORMED_BODY');
      expect(problem.detail).toBe('The request body is not valid gzip.');
    });

    it('a small body that inflates beyond the 1 MiB limit is 413, without being inflated whole', async () => {
      const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
      expect(bomb.length).toBeLessThan(100 * 1024);
      const answer = await send(bomb, { 'content-encoding': 'gzip' });
      const problem = expectProblem(answer, 413, 'PAYLOAD_TOO_LARGE');
      expect(problem.detail).toBe('The request body, decompressed, exceeds the size limit of this route.');
    });
  });
});
