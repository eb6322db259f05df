import { ModuleRef } from '@nestjs/core';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { UNMATCHED_ROUTE } from '../../src/metrics/request-metrics.js';
import { aRegistration, bearer } from '../support/builders.js';
import { aClaimedDevice, aCustomer, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problems.js';
import { parseExposition, samplesOf, valueOf, type Sample } from '../support/prometheus.js';
import { openSse } from '../support/sse.js';
import { history, ingest, iso, type TelemetryRecordBody } from '../support/telemetry.js';

const INGEST_ROUTE = '/api/v1/telemetry';
const HISTORY_ROUTE = '/api/v1/dashboard/devices/:deviceId/telemetry/history';
const REGISTER_ROUTE = '/api/v1/device/register';
const CLAIM_ROUTE = '/api/v1/user/devices/claim';

/** TCP listeners this process has open (the API's, the metrics', any other). */
const listeners = () => process.getActiveResourcesInfo().filter((resource) => resource === 'TCPServerWrap').length;

/** GET /metrics on the API's port, outside the generated client (the route is in no OpenAPI document). */
async function metricsOnApiPort(t: TestApp): Promise<{ response: Response; error: unknown }> {
  const response = await fetch(`${t.baseUrl}/metrics`);
  return { response, error: await response.json() };
}

describe('metrics: off without METRICS_PORT', () => {
  let t: TestApp;
  let before: number;

  beforeAll(async () => {
    before = listeners();
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('opens no listener but the API: no metrics server exists', () => {
    expect(listeners() - before).toBe(1);
    expect(() => t.app.get(ModuleRef).get(MetricsServer, { strict: false })).toThrow(/MetricsServer/);
  });

  it('GET /metrics on the API port is a 404 problem document', async () => {
    const problem = expectProblem(await metricsOnApiPort(t), 404, 'NOT_FOUND');

    expect(problem.instance).toBe('/metrics');
  });
});

describe('metrics: on with METRICS_PORT', () => {
  let t: TestApp;
  let owner: SignedIn;
  let before: number;
  let scrapeUrl: string;

  const scrape = async (): Promise<Sample[]> => {
    const response = await fetch(scrapeUrl);
    expect(response.status).toBe(200);
    return parseExposition(await response.text());
  };

  beforeAll(async () => {
    before = listeners();
    t = await createTestApp({ METRICS_PORT: '0', TELEMETRY_MAX_REQUESTS_PER_DEVICE: '3' });
    scrapeUrl = `http://127.0.0.1:${t.app.get(MetricsServer).address()!.port}/metrics`;
    owner = await aCustomer(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('listens on a port of its own, on loopback, and answers the Prometheus text format there only', async () => {
    const address = t.app.get(MetricsServer).address()!;

    expect(listeners() - before).toBe(2);
    expect(address.address).toBe('127.0.0.1');
    expect(address.port).not.toBe(Number(new URL(t.baseUrl).port));
    const response = await fetch(scrapeUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await response.text();
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(parseExposition(text).length).toBeGreaterThan(50);
    expect((await fetch(new URL('/', scrapeUrl))).status).toBe(404);
    expect((await fetch(scrapeUrl, { method: 'POST' })).status).toBe(404);
  });

  it('is not reachable on the API port: 404 problem document, counted as an unmatched route', async () => {
    const baseline = await scrape();

    const problem = expectProblem(await metricsOnApiPort(t), 404, 'NOT_FOUND');

    expect(problem.instance).toBe('/metrics');
    const after = await scrape();
    const unmatched = { route: UNMATCHED_ROUTE, method: 'GET', status_code: '404' };
    expect(valueOf(after, 'http_request_duration_seconds_count', unmatched) - valueOf(baseline, 'http_request_duration_seconds_count', unmatched)).toBe(1);
  });

  it('counts what real requests did, by route pattern, never by URL', async () => {
    const baseline = await scrape();
    const now = Date.now();
    const records = (from: number, count: number): TelemetryRecordBody[] =>
      Array.from({ length: count }, (_, i) => ({ ts: iso(now - 60_000 * (from + i + 1)), metrics: { soc: 80, voltage: 13.2 } }));

    // A device registers and is claimed.
    const registration = aRegistration();
    const registered = await t.api.POST('/api/v1/device/register', { body: registration });
    expect(registered.response.status).toBe(201);
    expect((await claim(t, owner, { deviceId: registration.deviceId, claimCode: registration.claimCode! })).response.status).toBe(200);
    const token = registered.data!.accessToken;
    // Three uploads (the budget): 4 new; 2 new and 1 sent before; 1 new, 1 older than the retention
    // and 1 of a time already stored with other metrics.
    const first = records(0, 4);
    const uploads = [first, [...records(4, 2), first[0]], [...records(6, 1), { ts: iso(now - 400 * 86_400_000), metrics: { soc: 50 } }, { ...first[1], metrics: { soc: 81 } }]];
    const answers = [];
    for (const batch of uploads) {
      const { data, response } = await ingest(t.api, token, batch);
      expect(response.status).toBe(200);
      answers.push({ accepted: data!.accepted, duplicates: data!.duplicates, rejected: data!.rejected.length });
    }
    expect(answers).toEqual([
      { accepted: 4, duplicates: 0, rejected: 0 },
      { accepted: 2, duplicates: 1, rejected: 0 },
      { accepted: 1, duplicates: 0, rejected: 2 },
    ]);
    // The fourth upload is over the device's budget.
    expectProblem(await ingest(t.api, token, records(8, 1)), 429, 'RATE_LIMITED');
    // The owner reads the history; a client asks for a route that does not exist.
    expect((await history(t.api, bearer(owner.accessToken), registration.deviceId)).response.status).toBe(200);
    expect((await fetch(`${t.baseUrl}/api/v1/devices-${registration.deviceId}/nothing`)).status).toBe(404);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => valueOf(after, name, labels) - valueOf(baseline, name, labels);
    const requests = (route: string, method: string, status: number) => delta('http_request_duration_seconds_count', { route, method, status_code: String(status) });
    expect({
      register: requests(REGISTER_ROUTE, 'POST', 201),
      claim: requests(CLAIM_ROUTE, 'POST', 200),
      uploads: requests(INGEST_ROUTE, 'POST', 200),
      refused: requests(INGEST_ROUTE, 'POST', 429),
      history: requests(HISTORY_ROUTE, 'GET', 200),
      unmatched: requests(UNMATCHED_ROUTE, 'GET', 404),
    }).toEqual({ register: 1, claim: 1, uploads: 3, refused: 1, history: 1, unmatched: 1 });
    expect(delta('http_request_duration_seconds_sum', { route: HISTORY_ROUTE, method: 'GET', status_code: '200' })).toBeGreaterThan(0);
    expect(delta('http_request_duration_seconds_bucket', { route: INGEST_ROUTE, method: 'POST', status_code: '200', le: '+Inf' })).toBe(3);
    // No label anywhere holds the device id: not the history URL, not the unknown one.
    expect(after.filter((sample) => Object.values(sample.labels).some((value) => value.includes(registration.deviceId)))).toEqual([]);

    expect({
      batches: delta('dcs_ingest_batches_total'),
      accepted: delta('dcs_ingest_records_total', { result: 'accepted' }),
      duplicate: delta('dcs_ingest_records_total', { result: 'duplicate' }),
      rejected: delta('dcs_ingest_records_total', { result: 'rejected' }),
      conflicting: delta('dcs_ingest_records_total', { result: 'conflicting' }),
    }).toEqual({ batches: 3, accepted: 7, duplicate: 1, rejected: 1, conflicting: 1 });
    // Each upload waited for its answer before the next was sent: one statement each, carrying
    // the records admitted (new, duplicate and conflicting; the one rejected for its time never reaches the writer).
    expect({
      flushes: delta('dcs_ingest_flush_records_count'),
      records: delta('dcs_ingest_flush_records_sum'),
      uploads: delta('dcs_ingest_flush_uploads_sum'),
      timed: delta('dcs_ingest_flush_duration_seconds_count'),
    }).toEqual({ flushes: 3, records: 9, uploads: 3, timed: 3 });
    expect(delta('dcs_ingest_flush_duration_seconds_sum')).toBeGreaterThan(0);
    expect(delta('dcs_rate_limit_refusals_total', { limiter: 'ingest' })).toBe(1);
  });

  it('counts refusals by the limit that refused them', async () => {
    const baseline = await scrape();

    // Ten wrong passwords fill the account's budget of failures (LOGIN_MAX_FAILURES_PER_DEVICE): the eleventh attempt is refused.
    for (let i = 0; i < 10; i++) {
      const { response } = await t.api.POST('/api/v1/auth/login', { body: { email: owner.email, password: `wrong-password-${i}` } });
      expect(response.status).toBe(401);
    }
    expectProblem(await t.api.POST('/api/v1/auth/login', { body: { email: owner.email, password: 'wrong-password-x' } }), 429, 'RATE_LIMITED');

    const after = await scrape();
    expect(valueOf(after, 'dcs_rate_limit_refusals_total', { limiter: 'user-login' }) - valueOf(baseline, 'dcs_rate_limit_refusals_total', { limiter: 'user-login' })).toBe(1);
    expect(valueOf(after, 'dcs_rate_limit_refusals_total', { limiter: 'ingest' }) - valueOf(baseline, 'dcs_rate_limit_refusals_total', { limiter: 'ingest' })).toBe(0);
  });

  it('reads the pool, the job queues, open streams and unresolved alerts when scraped', async () => {
    // An alert opens: temperature above 55 for a minute (the shipped fleet default).
    const device = await aClaimedDevice(t, owner);
    const hot = Date.now() - 120_000;
    const { response } = await ingest(t.api, device.registered.accessToken, [0, 30_000, 61_000].map((offset) => ({ ts: iso(hot + offset), metrics: { temperature: 60 } })));
    expect(response.status).toBe(200);
    const unresolved = await eventually(async () => {
      const { rows } = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM alerts WHERE state = 'open'");
      expect(rows[0].n).toBeGreaterThan(0);
      return rows[0].n;
    });
    // The alert count is cached for 10 s: a scrape made before the alert opened may still show the old one.
    await eventually(async () => expect(valueOf(await scrape(), 'dcs_alerts_unresolved', { state: 'open' })).toBe(unresolved), 15_000);

    const stream = await openSse(`${t.baseUrl}/api/v1/dashboard/stream`, bearer(owner.accessToken));
    expect(stream.status).toBe(200);
    const samples = await scrape();
    stream.close();

    expect(valueOf(samples, 'dcs_stream_subscribers')).toBe(1);
    expect(valueOf(samples, 'dcs_command_long_polls')).toBe(0);
    expect(valueOf(samples, 'dcs_alerts_unresolved', { state: 'acknowledged' })).toBe(0);
    expect(valueOf(samples, 'dcs_db_pool_connections', { state: 'in_use' }) + valueOf(samples, 'dcs_db_pool_connections', { state: 'idle' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'dcs_db_pool_connections', { state: 'in_use' }) + valueOf(samples, 'dcs_db_pool_connections', { state: 'idle' })).toBeLessThanOrEqual(5);
    expect(samplesOf(samples, 'dcs_db_pool_waiting_requests')).toEqual([expect.objectContaining({ value: 0 })]);
    expect(samplesOf(samples, 'dcs_jobs', { queue: 'deliveries.failed' }).map((sample) => sample.labels.state).sort()).toEqual(['active', 'failed', 'queued']);
    expect(samplesOf(samples, 'nodejs_eventloop_lag_p99_seconds')).toHaveLength(1);
    expect(samplesOf(samples, 'process_cpu_seconds_total')).toHaveLength(1);
    await eventually(async () => expect(valueOf(await scrape(), 'dcs_stream_subscribers')).toBe(0));
  });
});
