import http from 'node:http';
import { connect } from 'node:net';
import createClient from 'openapi-fetch';
import pg from 'pg';
import type { paths } from '@device-cloud/client';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { createTestDatabase, endPool } from '../support/postgres.js';
import {
  buildService,
  freePort,
  httpCall,
  killService,
  scratchDir,
  startService,
  waitFor,
  waitUntilReady,
  type HttpAnswer,
  type Running,
} from '../support/service-process.js';
import { openSse } from '../support/sse.js';
import { HOUR, iso, type IngestResult, type TelemetryRecordBody } from '../support/telemetry.js';

/**
 * The compiled service as a process on its own database of the test PostgreSQL, so the data
 * outlives the process: killed in the middle of ingest, stopped with SIGTERM under load, and
 * held up by clients that send their requests a byte at a time.
 */
let main = '';
let database: { url: string; drop: () => Promise<void> };
let db: pg.Pool;
const started: Running[] = [];

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function serviceEnv(port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: database.url,
    DATA_DIR: scratchDir(),
    LOG_LEVEL: 'warn',
    DB_POOL_SIZE: '5',
    // Fixed keys: tokens issued before a restart stay valid after it.
    DEVICE_JWT_SECRET: 'lifecycle-test-device-jwt-secret-0123456789',
    CUSTOMER_JWT_SECRET: 'lifecycle-test-customer-jwt-secret-0123456789',
    SECRET_PEPPER: 'lifecycle-test-secret-pepper-0123456789',
    ...extra,
  };
}

async function start(env: Record<string, string>): Promise<Running> {
  const service = await startService(main, env);
  started.push(service);
  await waitUntilReady(Number(env.PORT));
  return service;
}

function registerDevices(port: number, count: number): Promise<Registered[]> {
  const api = createClient<paths>({ baseUrl: `http://127.0.0.1:${port}` });
  return Promise.all(Array.from({ length: count }, () => registerDevice(api)));
}

interface Batch {
  device: Registered;
  records: TelemetryRecordBody[];
}

/** `count` batches of `size` records one second apart from `from`; soc is the record's position, so every value is known. */
function batchesFor(device: Registered, count: number, size: number, from: number): Batch[] {
  return Array.from({ length: count }, (_, batch) => ({
    device,
    records: Array.from({ length: size }, (_, index) => {
      const position = batch * size + index;
      return { ts: iso(from + position * 1000), metrics: { soc: position, voltage: 48 + (position % 40) / 10 } };
    }),
  }));
}

const keyOf = (deviceId: string, ts: number) => `${deviceId}|main|${ts}`;
const keysOf = (batch: Batch) => batch.records.map((record) => keyOf(batch.device.deviceId, Date.parse(record.ts)));

function ingestOver(port: number, agent: http.Agent, batch: Batch): Promise<HttpAnswer> {
  return httpCall(port, { method: 'POST', path: '/api/v1/telemetry', headers: bearer(batch.device.accessToken), body: { records: batch.records }, agent });
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

interface StoredRow {
  device_id: string;
  battery_id: string;
  ts: Date;
  soc: number;
}

async function storedRows(deviceIds: string[]): Promise<StoredRow[]> {
  const { rows } = await db.query<StoredRow>(
    `SELECT device_id, battery_id, ts, (metrics->>'soc')::float8 AS soc FROM telemetry WHERE device_id = ANY($1::text[])`,
    [deviceIds],
  );
  return rows;
}

beforeAll(async () => {
  main = await buildService();
  database = await createTestDatabase();
  db = new pg.Pool({ connectionString: database.url, max: 2 });
}, 180_000);

afterAll(async () => {
  for (const service of started) await killService(service);
  await endPool(db);
  await database?.drop();
});

describe('killed with SIGKILL in the middle of ingest, then restarted on the same port', () => {
  const DEVICES = 20;
  const BATCHES = 25;
  const SIZE = 10;

  it('keeps every acknowledged record exactly once, and stores nothing that was not sent', async () => {
    const port = await freePort();
    const env = serviceEnv(port);
    let service = await start(env);
    const devices = await registerDevices(port, DEVICES);
    const from = Math.floor((Date.now() - 2 * HOUR) / 1000) * 1000;

    const sent = new Set<string>();
    const acknowledged = new Set<string>();
    /** Sent at least once without a 200 coming back: stored or not, nobody told the gateway. */
    const unconfirmed = new Set<string>();
    const unexpected: string[] = [];
    let acknowledgedBatches = 0;
    let failedAttempts = 0;
    let acceptedAnswered = 0;
    let duplicatesAnswered = 0;
    const giveUpAt = Date.now() + 150_000;

    // A gateway: its batches in order over one keep-alive connection, each retried until a 200.
    const gateway = async (device: Registered) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (const batch of batchesFor(device, BATCHES, SIZE, from)) {
        const keys = keysOf(batch);
        for (let attempt = 1; ; attempt++) {
          for (const key of keys) sent.add(key);
          const answer = await ingestOver(port, agent, batch).catch(errorCode);
          if (typeof answer !== 'string' && answer.status === 200) {
            const result = JSON.parse(answer.body) as IngestResult;
            if (result.accepted + result.duplicates !== SIZE) unexpected.push(`${device.deviceId}: ${answer.body}`);
            if (attempt === 1 && result.duplicates > 0) unexpected.push(`${device.deviceId}: duplicates on a first attempt: ${answer.body}`);
            acceptedAnswered += result.accepted;
            duplicatesAnswered += result.duplicates;
            for (const key of keys) acknowledged.add(key);
            acknowledgedBatches += 1;
            break;
          }
          failedAttempts += 1;
          if (typeof answer !== 'string' && answer.status !== 503) unexpected.push(`${device.deviceId}: ${answer.status} ${answer.body}`);
          for (const key of keys) unconfirmed.add(key);
          if (Date.now() > giveUpAt) return;
          await sleep(100);
        }
      }
      agent.destroy();
    };

    const gateways = devices.map(gateway);
    await waitFor(() => acknowledgedBatches >= (DEVICES * BATCHES) / 3, 60_000, 'a third of the batches to be acknowledged');
    service.child.kill('SIGKILL');
    await service.exited;
    service = await start(env);
    await Promise.all(gateways);

    expect(unexpected).toEqual([]);
    expect(failedAttempts).toBeGreaterThan(0);
    expect(acknowledgedBatches).toBe(DEVICES * BATCHES);

    const rows = await storedRows(devices.map((device) => device.deviceId));
    const stored = rows.map((row) => keyOf(row.device_id, row.ts.getTime()));
    const storedSet = new Set(stored);
    expect(storedSet.size).toBe(stored.length);
    expect([...acknowledged].filter((key) => !storedSet.has(key))).toEqual([]);
    expect(stored.filter((key) => !acknowledged.has(key) && !unconfirmed.has(key))).toEqual([]);
    expect(stored.filter((key) => !sent.has(key))).toEqual([]);
    // The first stored value is the one sent (every attempt sends the same).
    expect(rows.filter((row) => row.soc !== (row.ts.getTime() - from) / 1000)).toEqual([]);
    // Records stored by an attempt whose answer was lost come back as duplicates of the retry, once.
    expect(acceptedAnswered + duplicatesAnswered).toBe(stored.length);
    expect(duplicatesAnswered).toBeLessThanOrEqual(unconfirmed.size);
    // The rollup counted each record once, retries included.
    const rollup = await db.query<{ count: number }>(
      `SELECT coalesce(sum(count), 0)::int AS count FROM telemetry_rollup_5m WHERE device_id = ANY($1::text[]) AND metric = 'soc'`,
      [devices.map((device) => device.deviceId)],
    );
    expect(rollup.rows[0].count).toBe(stored.length);

    process.stdout.write(`SIGKILL figures: records ${DEVICES * BATCHES * SIZE}, acknowledged ${acknowledged.size}, stored ${stored.length}, unconfirmed ${unconfirmed.size}, stored by a lost answer ${duplicatesAnswered}, failed attempts ${failedAttempts}\n`);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  }, 240_000);
});

/**
 * An upload whose headers and first half of the body go out now and the rest when `finish` is
 * called: a request that is in flight across whatever happens in between.
 */
function startUpload(port: number, batch: Batch): { finish: () => void; answer: Promise<HttpAnswer> } {
  const payload = Buffer.from(JSON.stringify({ records: batch.records }));
  const half = Math.floor(payload.length / 2);
  let finish = () => {};
  const answer = new Promise<HttpAnswer>((done, fail) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/v1/telemetry',
        agent: false,
        headers: { ...bearer(batch.device.accessToken), 'content-type': 'application/json', 'content-length': payload.length },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => done({ status: response.statusCode ?? 0, headers: response.headers, body, httpVersion: response.httpVersion, reusedSocket: request.reusedSocket }));
      },
    );
    request.on('error', fail);
    request.write(payload.subarray(0, half));
    finish = () => request.end(payload.subarray(half));
  });
  return { finish, answer };
}

describe('SIGTERM under load', () => {
  const DELAY_MS = 1500;

  it('turns readiness down at once, finishes requests in flight, stores every 2xx and exits despite idle keep-alive connections', async () => {
    const port = await freePort();
    // Eight connections stand for a fleet: each sends as fast as it is answered, far above one
    // gateway's upload budget, which is not what this test is about (device-rate-limits is).
    const service = await start(serviceEnv(port, { SHUTDOWN_DELAY_MS: String(DELAY_MS), TELEMETRY_MAX_REQUESTS_PER_DEVICE: '1000000' }));
    const [uploader, ...devices] = await registerDevices(port, 9);
    const from = Math.floor((Date.now() - 2 * HOUR) / 1000) * 1000;

    // Idle keep-alive connections, as a load balancer or a quiet gateway leaves them.
    const idleAgent = new http.Agent({ keepAlive: true, maxSockets: 5 });
    await Promise.all(Array.from({ length: 5 }, () => httpCall(port, { path: '/health/live', agent: idleAgent })));
    const idleSockets = Object.values(idleAgent.freeSockets).flatMap((sockets) => sockets ?? []);
    expect(idleSockets).toHaveLength(5);
    const idleClosedAt = idleSockets.map((socket) => new Promise<number>((done) => socket.once('close', () => done(Date.now()))));

    const upload = startUpload(port, batchesFor(uploader, 1, 200, from)[0]);

    const answers: Array<{ batch: Batch; answer: HttpAnswer; sentAt: number }> = [];
    const failures: string[] = [];
    let signalledAt = Number.POSITIVE_INFINITY;
    const loaders = devices.map(async (device) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (const batch of batchesFor(device, 1000, 20, from)) {
        const sentAt = Date.now();
        try {
          answers.push({ batch, answer: await ingestOver(port, agent, batch), sentAt });
        } catch (error) {
          failures.push(errorCode(error));
          if (Date.now() > signalledAt) break;
        }
      }
      agent.destroy();
    });

    await waitFor(() => answers.length >= 50, 30_000, 'the load to run');
    signalledAt = Date.now();
    service.child.kill('SIGTERM');

    // Readiness, probed as an orchestrator does: a new connection each time.
    let ready = await httpCall(port, { path: '/health/ready' });
    while (ready.status === 200 && Date.now() - signalledAt < 5000) ready = await httpCall(port, { path: '/health/ready' });
    const readyDownAfterMs = Date.now() - signalledAt;
    expect(ready.status).toBe(503);
    expect(readyDownAfterMs).toBeLessThan(1000);

    // The listener closes after the delay; the upload started before the signal still gets its answer.
    await waitFor(() => Date.now() - signalledAt > DELAY_MS + 500, 10_000, 'the listener to close');
    upload.finish();
    const uploaded = await upload.answer;
    expect(uploaded.status).toBe(200);
    expect(uploaded.headers.connection).toBe('close');
    expect(JSON.parse(uploaded.body)).toEqual({ accepted: 200, duplicates: 0, rejected: [] });

    expect(await service.exited).toBe(0);
    const exitedAfterMs = Date.now() - signalledAt;
    expect(exitedAfterMs).toBeLessThan(25_000);
    await Promise.all(loaders);
    const idleClosedAfterMs = Math.max(...(await Promise.all(idleClosedAt))) - signalledAt;
    // Closed by the service when it stopped listening, not at the 10 s keep-alive timeout.
    expect(idleClosedAfterMs).toBeLessThan(DELAY_MS + 3000);

    // Every answer is a 200, or a 503 problem that tells the client to go elsewhere.
    const refused = answers.filter(({ answer }) => answer.status !== 200);
    expect(refused.filter(({ answer }) => answer.status !== 503 || answer.headers.connection !== 'close' || JSON.parse(answer.body).code !== 'SERVICE_UNAVAILABLE')).toEqual([]);
    // Once readiness was down, every answer asked the client to close the connection.
    const afterSignal = answers.filter(({ sentAt }) => sentAt > signalledAt + readyDownAfterMs);
    expect(afterSignal.length).toBeGreaterThan(0);
    expect(afterSignal.filter(({ answer }) => answer.headers.connection !== 'close')).toEqual([]);

    // Every 2xx is stored, with the values sent.
    const acknowledged = answers.filter(({ answer }) => answer.status === 200);
    const acknowledgedKeys = [...acknowledged.flatMap(({ batch }) => keysOf(batch)), ...keysOf(batchesFor(uploader, 1, 200, from)[0])];
    const rows = await storedRows([uploader, ...devices].map((device) => device.deviceId));
    const storedSet = new Set(rows.map((row) => keyOf(row.device_id, row.ts.getTime())));
    expect(acknowledgedKeys.filter((key) => !storedSet.has(key))).toEqual([]);
    expect(rows.filter((row) => row.soc !== (row.ts.getTime() - from) / 1000)).toEqual([]);
    process.stdout.write(
      `SIGTERM figures: ready down after ${readyDownAfterMs} ms, exit after ${exitedAfterMs} ms, idle closed after ${idleClosedAfterMs} ms, ${acknowledged.length} 200s, ${refused.length} refused, ${afterSignal.length} after signal, failures ${JSON.stringify(failures)}\n`,
    );
  }, 120_000);

  it('closes connections still open after SHUTDOWN_GRACE_MS and exits cleanly', async () => {
    const port = await freePort();
    // The request timeout is not enforced once the listener is closed: the grace period is what ends a stalled upload.
    const service = await start(serviceEnv(port, { SHUTDOWN_DELAY_MS: '0', SHUTDOWN_GRACE_MS: '2000', REQUEST_TIMEOUT_MS: '60000' }));
    const [device] = await registerDevices(port, 1);
    const stalled = startUpload(port, batchesFor(device, 1, 10, Date.now() - HOUR)[0]);
    const outcome = stalled.answer.then(
      (answer) => `answered ${answer.status}`,
      (error: unknown) => errorCode(error),
    );
    await sleep(300);

    const signalledAt = Date.now();
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    const exitedAfterMs = Date.now() - signalledAt;
    expect(exitedAfterMs).toBeGreaterThanOrEqual(2000);
    expect(exitedAfterMs).toBeLessThan(4500);
    expect(await outcome).toBe('ECONNRESET');
    expect(service.output()).toContain('Requests still open after SHUTDOWN_GRACE_MS');
  }, 120_000);
});

interface Trickled {
  closedAfterMs: number;
  firstLine: string;
}

/** Opens a connection, writes `head`, then one more byte of `drip` each second until the service closes the connection. */
function trickle(port: number, head: string, drip: string): Promise<Trickled> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1');
    const openedAt = Date.now();
    let received = '';
    let sentBytes = 0;
    const timer = setInterval(() => {
      if (sentBytes < drip.length) socket.write(drip[sentBytes++]);
    }, 1000);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      done({ closedAfterMs: Date.now() - openedAt, firstLine: received.split('\r\n')[0] });
    });
    socket.once('connect', () => {
      if (head) socket.write(head);
    });
    setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      fail(new Error(`connection still open after 20 s (head ${JSON.stringify(head.slice(0, 30))})`));
    }, 20_000).unref();
  });
}

describe('SIGTERM with open dashboard streams', () => {
  it('keeps the streams open through SHUTDOWN_DELAY_MS, then ends them, refuses new ones and exits well within the grace period', async () => {
    const port = await freePort();
    const DELAY = 1000;
    const service = await start(serviceEnv(port, { SHUTDOWN_DELAY_MS: String(DELAY), SHUTDOWN_GRACE_MS: '20000' }));
    const email = `streams-${Date.now()}@example.com`;
    expect((await httpCall(port, { method: 'POST', path: '/api/v1/auth/signup', body: { email, password: 'long-password-1' } })).status).toBe(201);
    const login = await httpCall(port, { method: 'POST', path: '/api/v1/auth/login', body: { email, password: 'long-password-1' } });
    const headers = { authorization: `Bearer ${JSON.parse(login.body).accessToken}` };
    const streams = await Promise.all(Array.from({ length: 5 }, () => openSse(`http://127.0.0.1:${port}/api/v1/dashboard/stream`, headers)));
    expect(streams.map((stream) => stream.status)).toEqual([200, 200, 200, 200, 200]);

    const signalledAt = Date.now();
    service.child.kill('SIGTERM');
    await sleep(DELAY / 2);
    // Readiness is down, the listener still open: a new stream goes elsewhere, the open ones stay.
    const late = await openSse(`http://127.0.0.1:${port}/api/v1/dashboard/stream`, headers);
    expect(late.status).toBe(503);
    expect(JSON.parse(late.body)).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(streams.every((stream) => !stream.ended)).toBe(true);

    await Promise.all(streams.map((stream) => stream.closed(10_000)));
    const streamsClosedAfterMs = Date.now() - signalledAt;
    expect(await service.exited).toBe(0);
    const exitedAfterMs = Date.now() - signalledAt;
    expect(streamsClosedAfterMs).toBeGreaterThanOrEqual(DELAY);
    expect(exitedAfterMs).toBeLessThan(DELAY + 5000);
    expect(service.output()).not.toContain('still open after SHUTDOWN_GRACE_MS');
    process.stdout.write(`SIGTERM with 5 open streams: streams ended after ${streamsClosedAfterMs} ms, exit after ${exitedAfterMs} ms\n`);
  }, 60_000);
});

describe('slow clients', () => {
  it('closes a connection that trickles its request at REQUEST_TIMEOUT_MS while other clients are answered at once', async () => {
    const port = await freePort();
    // The normal gateway sends as fast as it is answered: not this test's business to meet the upload limit.
    const service = await start(serviceEnv(port, { REQUEST_TIMEOUT_MS: '2000', TELEMETRY_MAX_REQUESTS_PER_DEVICE: '1000000' }));
    const [device] = await registerDevices(port, 1);
    const auth = `Bearer ${device.accessToken}`;
    const body = JSON.stringify({ records: [{ ts: iso(Date.now() - HOUR), metrics: { soc: 1 } }] });

    const slow = [
      ...Array.from({ length: 4 }, () => trickle(port, 'POST /api/v1/telemetry HTTP/1.1\r\nHost: localhost\r\nX-Slow: ', 'abcdefghijklmnopqrstuvwxyz')),
      ...Array.from({ length: 4 }, () =>
        trickle(port, `POST /api/v1/telemetry HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body),
      ),
      trickle(port, '', ''),
    ];
    let slowOpen = true;
    void Promise.allSettled(slow).then(() => (slowOpen = false));

    // Meanwhile a normal gateway keeps sending, one record after the other until the slow ones are
    // closed, each answered quickly: however fast or slow the machine, its requests span the window.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const latencies: number[] = [];
    const statuses: number[] = [];
    const from = Date.now() - 3 * HOUR;
    const firstSentAt = Date.now();
    let lastAnsweredAt = firstSentAt;
    for (let index = 0; slowOpen && index < 5000; index++) {
      const startedAt = Date.now();
      const batch = { device, records: [{ ts: iso(from + index * 1000), metrics: { soc: index % 100 } }] };
      statuses.push((await ingestOver(port, agent, batch)).status);
      lastAnsweredAt = Date.now();
      latencies.push(lastAnsweredAt - startedAt);
    }
    agent.destroy();

    const results = await Promise.all(slow);
    for (const result of results) {
      expect(result.firstLine).toBe('HTTP/1.1 408 Request Timeout');
      expect(result.closedAfterMs).toBeGreaterThanOrEqual(1900);
      expect(result.closedAfterMs).toBeLessThan(3500);
    }
    expect(statuses.length).toBeGreaterThanOrEqual(10);
    expect(lastAnsweredAt - firstSentAt).toBeGreaterThanOrEqual(1500);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(Math.max(...latencies)).toBeLessThan(1000);
    const stored = await db.query<{ count: number }>('SELECT count(*)::int AS count FROM telemetry WHERE device_id = $1', [device.deviceId]);
    expect(stored.rows[0].count).toBe(statuses.length);

    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    process.stdout.write(`slow figures: closed after ${results.map((r) => r.closedAfterMs).join(',')} ms; ${statuses.length} normal requests, max ${Math.max(...latencies)} ms\n`);
  }, 120_000);
});
