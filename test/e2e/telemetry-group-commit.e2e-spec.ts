import { registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectedRollup, ingest, iso, MINUTE, rollupRows, telemetryRows, type TelemetryRecordBody } from '../support/telemetry.js';

/**
 * Concurrent requests are merged into one ingest statement (group commit). Whatever merges,
 * every request must get its own counts, answered after its records are committed.
 */
describe('telemetry group commit', () => {
  let t: TestApp;
  const now = Date.now();

  beforeAll(async () => {
    t = await createTestApp({ DB_POOL_SIZE: '3' });
  });
  afterAll(() => t.close());

  const batch = (offsetMs: number, size: number, salt: number): TelemetryRecordBody[] =>
    Array.from({ length: size }, (_, i) => ({ ts: iso(now - 30 * MINUTE + offsetMs + i * 1000), metrics: { voltage: salt + i, soc: i } }));

  it('answers each of many concurrent requests from many devices with its own counts, and stores each record once', async () => {
    const devices = await Promise.all(Array.from({ length: 12 }, () => registerDevice(t.api)));
    const sent = devices.map((_, d) => Array.from({ length: 5 }, (_, b) => batch(b * 60_000, 8, d * 100 + b)));

    const answers = await Promise.all(devices.flatMap((device, d) => sent[d].map((records) => ingest(t.api, device.accessToken, records))));

    expect(answers.map((answer) => answer.response.status)).toEqual(answers.map(() => 200));
    expect(answers.map((answer) => answer.data)).toEqual(answers.map(() => ({ accepted: 8, duplicates: 0, rejected: [] })));
    for (const [d, device] of devices.entries()) {
      expect(await telemetryRows(t.db, device.deviceId)).toHaveLength(40);
      expect(await rollupRows(t.db, device.deviceId)).toEqual(expectedRollup(sent[d].flat()));
    }
  });

  it('gives a batch sent five times at once to exactly one request; the others count duplicates', async () => {
    const device = await registerDevice(t.api);
    const records = batch(0, 20, 7);

    const answers = await Promise.all(Array.from({ length: 5 }, () => ingest(t.api, device.accessToken, records)));

    expect(answers.map((answer) => answer.response.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.reduce((sum, answer) => sum + answer.data!.accepted, 0)).toBe(20);
    expect(answers.reduce((sum, answer) => sum + answer.data!.duplicates, 0)).toBe(80);
    expect(await rollupRows(t.db, device.deviceId)).toEqual(expectedRollup(records));
  });

  it('large batches from devices that share rollup rows, many at once (several flushes in parallel): every record once, every level exact', async () => {
    const devices = await Promise.all(Array.from({ length: 4 }, () => registerDevice(t.api)));
    // 16 requests of 500 records: more than one flush's worth waits, so flushes run side by side
    // and write the same 5-minute, hourly and daily rows of the same devices.
    const sent = devices.map((_, d) =>
      Array.from({ length: 4 }, (_, b) =>
        Array.from({ length: 500 }, (_, i) => ({ ts: iso(now - 40 * MINUTE + (i * 4 + b) * 1000 + d), metrics: { voltage: d * 1000 + b * 10 + (i % 7), soc: i % 100 } })),
      ),
    );

    const answers = await Promise.all(devices.flatMap((device, d) => sent[d].map((records) => ingest(t.api, device.accessToken, records))));

    expect(answers.map((answer) => [answer.response.status, answer.data])).toEqual(answers.map(() => [200, { accepted: 500, duplicates: 0, rejected: [] }]));
    for (const [d, device] of devices.entries()) {
      expect(await telemetryRows(t.db, device.deviceId)).toHaveLength(2000);
      expect(await rollupRows(t.db, device.deviceId)).toEqual(expectedRollup(sent[d].flat()));
    }
  });

  it('the same large batches again, all at once: nothing stored twice, every request counts duplicates', async () => {
    const device = await registerDevice(t.api);
    const records = Array.from({ length: 500 }, (_, i) => ({ ts: iso(now - 50 * MINUTE + i * 1000), metrics: { voltage: i } }));

    const answers = await Promise.all(Array.from({ length: 6 }, () => ingest(t.api, device.accessToken, records)));

    expect(answers.map((answer) => answer.response.status)).toEqual(answers.map(() => 200));
    expect(answers.reduce((sum, answer) => sum + answer.data!.accepted, 0)).toBe(500);
    expect(answers.reduce((sum, answer) => sum + answer.data!.duplicates, 0)).toBe(2500);
    expect(await rollupRows(t.db, device.deviceId)).toEqual(expectedRollup(records));
  });
});
