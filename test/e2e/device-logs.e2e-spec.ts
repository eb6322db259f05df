import { gzipSync } from 'node:zlib';
import type { components, operations } from '@device-cloud/client';
import { bearer } from '../support/builders.js';
import { aClaimedDevice, aCustomer, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { dataOf, openSse, type SseMessage } from '../support/sse.js';

type Line = components['schemas']['LogLineRequest'];
type Headers = { authorization: string };

const MINUTE = 60_000;
const QUOTA = 4096;

interface Gateway {
  deviceId: string;
  headers: Headers;
}

async function aGateway(t: TestApp, owner: SignedIn): Promise<Gateway> {
  const { body, registered } = await aClaimedDevice(t, owner);
  return { deviceId: body.deviceId, headers: bearer(registered.accessToken) };
}

/** `count` lines a second apart ending `endMs`, cycling through the levels. */
function lines(count: number, endMs = Date.now() - MINUTE, prefix = 'line'): Line[] {
  const levels = ['error', 'warn', 'info', 'debug', 'verbose'] as const;
  return Array.from({ length: count }, (_, i) => ({ ts: new Date(endMs - (count - 1 - i) * 1000).toISOString(), level: levels[i % 5], tag: i % 2 === 0 ? 'wifi' : 'bms', message: `${prefix} ${i}` }));
}

function upload(t: TestApp, gateway: Gateway, batch: Line[]) {
  return t.api.POST('/api/v1/device/logs', { body: { lines: batch }, headers: gateway.headers });
}

function uploadRaw(t: TestApp, gateway: Gateway, body: Buffer | string, headers: Record<string, string> = {}) {
  return t.api.POST('/api/v1/device/logs', { body: { lines: [] }, bodySerializer: () => body as unknown as string, headers: { 'content-type': 'application/json', ...gateway.headers, ...headers } });
}

function list(t: TestApp, who: Headers, deviceId: string, query: NonNullable<operations['listDeviceLogs']['parameters']['query']> = {}) {
  return t.api.GET('/api/v1/dashboard/devices/{deviceId}/logs', { params: { path: { deviceId }, query }, headers: who });
}

async function storedLines(t: TestApp, deviceId: string): Promise<number> {
  return (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM device_logs WHERE device_id = $1', [deviceId])).rows[0].n;
}

async function usedBytes(t: TestApp, deviceId: string): Promise<number> {
  return Number((await t.db.query<{ bytes: string }>('SELECT COALESCE(sum(bytes), 0) AS bytes FROM device_log_usage WHERE device_id = $1', [deviceId])).rows[0].bytes);
}

describe('device logs', () => {
  let t: TestApp;
  let owner: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ LOG_BYTES_PER_DEVICE_PER_DAY: String(QUOTA) });
    owner = await aCustomer(t);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('stores a batch once, however often it is retried, plain or gzip-compressed, and counts its bytes', async () => {
    const gateway = await aGateway(t, owner);
    const batch = lines(50);
    expect((await upload(t, gateway, batch)).data).toEqual({ accepted: 50, duplicates: 0, rejected: [] });
    expect((await upload(t, gateway, batch)).data).toEqual({ accepted: 0, duplicates: 50, rejected: [] });
    expect((await uploadRaw(t, gateway, gzipSync(JSON.stringify({ lines: batch })), { 'content-encoding': 'gzip' })).data).toEqual({ accepted: 0, duplicates: 50, rejected: [] });
    const more = lines(3, Date.now(), 'more');
    expect((await uploadRaw(t, gateway, gzipSync(JSON.stringify({ lines: more })), { 'content-encoding': 'gzip' })).data).toEqual({ accepted: 3, duplicates: 0, rejected: [] });
    expect(await storedLines(t, gateway.deviceId)).toBe(53);
    const expectedBytes = [...batch, ...more].reduce((sum, line) => sum + Buffer.byteLength(line.message) + Buffer.byteLength(line.tag ?? ''), 0);
    expect(await usedBytes(t, gateway.deviceId)).toBe(expectedBytes);
  });

  it('refuses lines dated too far ahead or before retention one by one, and stores the rest', async () => {
    const gateway = await aGateway(t, owner);
    const batch = [...lines(2), { ts: new Date(Date.now() + 10 * MINUTE).toISOString(), level: 'info', message: 'from the future' }, { ts: new Date(Date.now() - 15 * 86_400_000).toISOString(), level: 'info', message: 'too old' }] satisfies Line[];
    expect((await upload(t, gateway, batch)).data).toEqual({ accepted: 2, duplicates: 0, rejected: [{ index: 2, code: 'TS_IN_FUTURE' }, { index: 3, code: 'TS_BEYOND_RETENTION' }] });
  });

  it('refuses bad levels, unknown fields, long messages and oversized bodies whole, storing nothing', async () => {
    const gateway = await aGateway(t, owner);
    const good = lines(1)[0];
    const refusals: Array<[unknown, string[]]> = [
      [{ lines: [{ ...good, level: 'fatal' }] }, ['lines.0.level']],
      [{ lines: [{ ...good, severity: 'high' }] }, ['lines.0.severity']],
      [{ lines: [{ ...good, ts: '2026-02-30T00:00:00Z' }] }, ['lines.0.ts']],
      [{ lines: [] }, ['lines']],
      [{ lines: [good, { ...good, message: 'é'.repeat(257) }] }, ['lines.1.message']],
      [{ lines: [good], extra: true }, ['extra']],
    ];
    for (const [body, fields] of refusals) {
      const problem = expectProblem(await uploadRaw(t, gateway, JSON.stringify(body)), 400, 'VALIDATION_FAILED');
      expect({ body, fields: fieldsOf(problem) }).toEqual({ body, fields });
    }
    const big = JSON.stringify({ lines: lines(600).map((line) => ({ ...line, message: 'x'.repeat(500) })) });
    expect(Buffer.byteLength(big)).toBeGreaterThan(256 * 1024);
    expectProblem(await uploadRaw(t, gateway, big), 413, 'PAYLOAD_TOO_LARGE');
    expectProblem(await uploadRaw(t, gateway, gzipSync(big), { 'content-encoding': 'gzip' }), 413, 'PAYLOAD_TOO_LARGE');
    expect(await storedLines(t, gateway.deviceId)).toBe(0);
    expect(await usedBytes(t, gateway.deviceId)).toBe(0);
  });

  it('answers 429 with Retry-After until midnight UTC once the daily quota is spent, for that device only', async () => {
    const gateway = await aGateway(t, owner);
    const other = await aGateway(t, owner);
    const heavy = (prefix: string) => lines(6, Date.now() - MINUTE, prefix).map((line) => ({ ...line, message: `${line.message} ${'x'.repeat(400)}` }));
    expect((await upload(t, gateway, heavy('a'))).data!.accepted).toBe(6);
    // The batch that crosses the quota is stored whole; the next one is refused.
    expect((await upload(t, gateway, heavy('b'))).data!.accepted).toBe(6);
    const before = await storedLines(t, gateway.deviceId);
    const refused = await upload(t, gateway, heavy('c'));
    expectProblem(refused, 429, 'LOG_QUOTA_EXCEEDED');
    const now = new Date();
    const toMidnight = Math.ceil((Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000);
    expect(Math.abs(Number(refused.response.headers.get('retry-after')) - toMidnight)).toBeLessThanOrEqual(2);
    expect(await storedLines(t, gateway.deviceId)).toBe(before);
    expect((await upload(t, other, heavy('a'))).data!.accepted).toBe(6);
  });

  describe('many uploads at once (merged into one transaction: group commit)', () => {
    const bytesOfLines = async (deviceId: string): Promise<number> =>
      Number((await t.db.query<{ bytes: string }>('SELECT COALESCE(sum(octet_length(message) + COALESCE(octet_length(tag), 0)), 0) AS bytes FROM device_logs WHERE device_id = $1', [deviceId])).rows[0].bytes);

    it('answers each request from many devices with its own counts, and stores and counts each line once', async () => {
      const gateways = await Promise.all(Array.from({ length: 8 }, () => aGateway(t, owner)));
      const sent = gateways.map((_, g) => Array.from({ length: 4 }, (_, b) => lines(10, Date.now() - MINUTE - b * 20_000, `g${g} b${b}`)));

      const answers = await Promise.all(gateways.flatMap((gateway, g) => sent[g].map((batch) => upload(t, gateway, batch))));

      expect(answers.map((answer) => [answer.response.status, answer.data])).toEqual(answers.map(() => [200, { accepted: 10, duplicates: 0, rejected: [] }]));
      for (const gateway of gateways) {
        expect(await storedLines(t, gateway.deviceId)).toBe(40);
        expect(await usedBytes(t, gateway.deviceId)).toBe(await bytesOfLines(gateway.deviceId));
      }
    });

    it('gives a batch sent five times at once to exactly one request, counting its bytes once', async () => {
      const gateway = await aGateway(t, owner);
      const batch = lines(20, Date.now() - MINUTE, 'five times');

      const answers = await Promise.all(Array.from({ length: 5 }, () => upload(t, gateway, batch)));

      expect(answers.map((answer) => answer.response.status)).toEqual([200, 200, 200, 200, 200]);
      expect(answers.map((answer) => answer.data!.accepted).sort()).toEqual([0, 0, 0, 0, 20]);
      expect(answers.reduce((sum, answer) => sum + answer.data!.duplicates, 0)).toBe(80);
      expect(await storedLines(t, gateway.deviceId)).toBe(20);
      expect(await usedBytes(t, gateway.deviceId)).toBe(await bytesOfLines(gateway.deviceId));
    });

    it('keeps the daily quota for batches that arrive together: stored ones are counted, none after the quota was reached', async () => {
      const gateway = await aGateway(t, owner);
      // Each batch is about 1,250 bytes of the 4,096: the fourth crosses the quota, later ones are refused.
      const heavy = (b: number) => lines(3, Date.now() - MINUTE - b * 10_000, `q${b}`).map((line) => ({ ...line, message: `${line.message} ${'x'.repeat(400)}` }));

      const answers = await Promise.all(Array.from({ length: 8 }, (_, b) => upload(t, gateway, heavy(b))));

      const stored = answers.filter((answer) => answer.response.status === 200);
      const refused = answers.filter((answer) => answer.response.status === 429);
      expect(stored.length + refused.length).toBe(8);
      expect(stored.map((answer) => answer.data!.accepted)).toEqual(stored.map(() => 3));
      expect(stored).toHaveLength(4);
      for (const answer of refused) expectProblem(answer, 429, 'LOG_QUOTA_EXCEEDED');
      expect(await storedLines(t, gateway.deviceId)).toBe(12);
      expect(await usedBytes(t, gateway.deviceId)).toBe(await bytesOfLines(gateway.deviceId));
    });
  });

  it('lists lines newest first, by level, text and time, in pages, for whoever sees the device', async () => {
    const gateway = await aGateway(t, owner);
    const end = Date.now() - MINUTE;
    const batch = lines(10, end);
    batch[7] = { ...batch[7], message: 'Battery 100% charged_now' };
    await upload(t, gateway, batch);

    const all = await list(t, owner.headers, gateway.deviceId, {});
    expect(all.data!.items.map((line) => line.message)).toEqual(batch.map((line) => line.message).reverse());
    expect(all.data!.items[0]).toEqual({ ts: batch[9].ts, level: batch[9].level, tag: batch[9].tag, message: batch[9].message });

    const warnings = await list(t, owner.headers, gateway.deviceId, { level: 'warn' });
    expect(new Set(warnings.data!.items.map((line) => line.level))).toEqual(new Set(['error', 'warn']));
    expect(warnings.data!.items).toHaveLength(4);
    expect((await list(t, owner.headers, gateway.deviceId, { q: '100% CHARGED' })).data!.items.map((line) => line.message)).toEqual(['Battery 100% charged_now']);
    expect((await list(t, owner.headers, gateway.deviceId, { q: '%' })).data!.items).toHaveLength(1);
    expect((await list(t, owner.headers, gateway.deviceId, { q: 'BMS' })).data!.items).toHaveLength(5);
    const window = await list(t, owner.headers, gateway.deviceId, { from: batch[2].ts, to: batch[5].ts });
    expect(window.data!.items.map((line) => line.message)).toEqual(['line 4', 'line 3', 'line 2']);

    const page1 = await list(t, owner.headers, gateway.deviceId, { limit: 6 });
    const page2 = await list(t, owner.headers, gateway.deviceId, { limit: 6, cursor: page1.data!.nextCursor! });
    expect([...page1.data!.items, ...page2.data!.items]).toEqual(all.data!.items);
    expect(page2.data!.nextCursor).toBeNull();

    const viewer = await aCustomer(t);
    await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: gateway.deviceId } }, body: { email: viewer.email, role: 'viewer' }, headers: owner.headers });
    expect((await list(t, viewer.headers, gateway.deviceId, {})).data!.items).toHaveLength(10);
    const key = (await t.api.POST('/api/v1/user/api-keys', { body: { name: 'logs', scope: 'read' }, headers: owner.headers })).data!.key;
    expect((await list(t, bearer(key), gateway.deviceId, { limit: 1 })).data!.items).toHaveLength(1);
    expectProblem(await list(t, (await aCustomer(t)).headers, gateway.deviceId, {}), 404, 'NOT_FOUND');
    expectProblem(await list(t, owner.headers, gateway.deviceId, { from: batch[5].ts, to: batch[2].ts }), 400, 'VALIDATION_FAILED');
    expectProblem(await list(t, owner.headers, gateway.deviceId, { cursor: 'bm90IGEgY3Vyc29y' }), 400, 'VALIDATION_FAILED');
    expectProblem(await list(t, owner.headers, gateway.deviceId, { level: 'loud' as never }), 400, 'VALIDATION_FAILED');
  });

  it('sends new lines to the owner\'s open dashboard streams, once', async () => {
    const gateway = await aGateway(t, owner);
    const live = await openSse(new URL(`/api/v1/dashboard/stream?deviceId=${gateway.deviceId}`, t.baseUrl).toString(), owner.headers);
    try {
      const logOf = (message: string) => (frame: SseMessage) => frame.event === 'log' && dataOf<{ message: string }>(frame).message === message;
      const batch = lines(2, Date.now() - MINUTE, 'live');
      const sentAt = performance.now();
      await upload(t, gateway, batch);
      const first = await live.next(logOf('live 0'), 2000);
      expect(first.at - sentAt).toBeLessThan(1000);
      expect(first.id).toBeNull();
      expect(dataOf(first)).toEqual({ deviceId: gateway.deviceId, ts: batch[0].ts, level: batch[0].level, tag: batch[0].tag, message: 'live 0' });
      await live.next(logOf('live 1'), 2000);
      // A retry stores nothing, so streams hear nothing: the next line they get is the new one.
      await upload(t, gateway, [...batch, ...lines(1, Date.now(), 'fresh')]);
      await live.next(logOf('fresh 0'), 2000);
      expect(live.messages.filter((frame) => frame.event === 'log').map((frame) => dataOf<{ message: string }>(frame).message)).toEqual(['live 0', 'live 1', 'fresh 0']);
    } finally {
      live.close();
    }
  });

  it('drops a day of lines once it is past LOG_RETENTION_DAYS', async () => {
    const gateway = await aGateway(t, owner);
    await upload(t, gateway, lines(3, Date.now() - 2 * 86_400_000));
    await upload(t, gateway, lines(2, Date.now() - MINUTE, 'today'));
    const partitions = await import('../../src/modules/device-logs/application/device-log-partitions.js');
    const maintenance = t.app.get(partitions.DeviceLogPartitions);
    t.clock.advanceMs(13 * 86_400_000);
    try {
      const { dropped } = await maintenance.run();
      expect(dropped.length).toBeGreaterThanOrEqual(1);
      expect(await storedLines(t, gateway.deviceId)).toBe(2);
    } finally {
      t.clock.reset();
      await maintenance.run();
    }
    expect((await upload(t, gateway, lines(1, Date.now(), 'after'))).data!.accepted).toBe(1);
  });
});
