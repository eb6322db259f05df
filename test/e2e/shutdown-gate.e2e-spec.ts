import type { Server } from 'node:http';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { httpCall } from '../support/service-process.js';
import { HOUR, iso, telemetryCounts } from '../support/telemetry.js';
import { ShutdownState } from '../../src/health/shutdown-state.js';

/**
 * What a client sees once shutdown has begun (main.ts on SIGTERM), step by step: first the
 * listener stays open and answers as usual, but closes every connection after its answer; once the
 * listener is closed, a request that still arrives on an open connection is refused.
 */
describe('shutdown', () => {
  let t: TestApp;
  let device: Registered;
  const port = () => Number(new URL(t.baseUrl).port);
  const records = (at: number) => [{ ts: iso(at), metrics: { soc: 50 } }];

  beforeAll(async () => {
    t = await createTestApp();
    device = await registerDevice(t.api);
  });
  afterAll(async () => {
    await t.close();
  });

  it('keeps answers open on keep-alive connections before it begins', async () => {
    const answer = await httpCall(port(), { path: '/health/ready' });
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).toBe('keep-alive');
  });

  it('then turns readiness down and closes every connection after its answer, still serving requests', async () => {
    t.app.get(ShutdownState).beginShutdown();

    const ready = await httpCall(port(), { path: '/health/ready' });
    expect(ready.status).toBe(503);
    expect(ready.headers.connection).toBe('close');
    const live = await httpCall(port(), { path: '/health/live' });
    expect(live.status).toBe(200);
    expect(live.headers.connection).toBe('close');
    const stored = await httpCall(port(), { method: 'POST', path: '/api/v1/telemetry', headers: bearer(device.accessToken), body: { records: records(Date.now() - HOUR) } });
    expect(stored.status).toBe(200);
    expect(stored.headers.connection).toBe('close');
    expect(JSON.parse(stored.body)).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  });

  it('once the listener is closed, refuses a new request with 503 SERVICE_UNAVAILABLE and stores nothing', async () => {
    (t.app.getHttpServer() as Server).close();
    const before = await telemetryCounts(t.db);

    const refused = await t.app.inject({
      method: 'POST',
      url: '/api/v1/telemetry',
      headers: { ...bearer(device.accessToken), 'content-type': 'application/json' },
      payload: JSON.stringify({ records: records(Date.now() - 2 * HOUR) }),
    });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.headers.connection).toBe('close');
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', instance: '/api/v1/telemetry' });
    expect(await telemetryCounts(t.db)).toEqual(before);

    const live = await t.app.inject({ method: 'GET', url: '/health/live' });
    expect(live.statusCode).toBe(200);
  });
});
