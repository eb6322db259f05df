import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { ChangeFeed } from '../../src/shared/database/change-feed.js';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { parseExposition, valueOf, type Sample } from '../support/prometheus.js';
import { ingest, iso } from '../support/telemetry.js';

const CAPACITY = 100;
const DEVICES = 130;

/**
 * The per-device caches of an instance hold at most DEVICE_CACHE_MAX_ENTRIES entries, however many
 * gateways it serves; the least recently used goes, and a gateway whose entry went is served as
 * before (from the database). /metrics counts each cache's entries, capacity and evictions.
 */
describe('memory bounded per instance', () => {
  let t: TestApp;
  let scrapeUrl: string;
  let devices: Registered[];
  /** The first gateway's configuration as it was answered while its entry was cached. */
  let firstAnswer: unknown;

  const scrape = async (): Promise<Sample[]> => parseExposition(await (await fetch(scrapeUrl)).text());
  const pollConfig = (device: Registered) => t.api.GET('/api/v1/device/config', { headers: bearer(device.accessToken) });

  beforeAll(async () => {
    t = await createTestApp({ METRICS_PORT: '0', DEVICE_CACHE_MAX_ENTRIES: String(CAPACITY), REGISTRATION_MAX_PER_ADDRESS: '1000' });
    scrapeUrl = `http://127.0.0.1:${t.app.get(MetricsServer).address()!.port}/metrics`;
    // Caches keep entries only while the change feed is live (it tells them when to forget).
    await eventually(async () => expect(t.app.get(ChangeFeed).live).toBe(true));
    devices = [];
    for (let i = 0; i < DEVICES; i++) devices.push(await registerDevice(t.api));
  });
  afterAll(async () => {
    await t?.close();
  });

  it('device snapshots: past the capacity the least recently used go, and /metrics says so', async () => {
    // Registrations announce their rows on the change feed, which makes the caches forget them
    // (a forgotten entry is not an eviction): polled until those announcements are all heard, a
    // pass over every gateway leaves the cache full, having evicted at least the 30 past capacity.
    await eventually(async () => {
      const evictedBefore = valueOf(await scrape(), 'dcs_cache_evictions_total', { cache: 'device_snapshots' });
      for (const device of devices) {
        const { data, response } = await pollConfig(device);
        expect(response.status).toBe(200);
        if (device === devices[0]) firstAnswer = data;
      }
      const samples = await scrape();
      expect(valueOf(samples, 'dcs_cache_entries', { cache: 'device_snapshots' })).toBe(CAPACITY);
      expect(valueOf(samples, 'dcs_cache_evictions_total', { cache: 'device_snapshots' }) - evictedBefore).toBeGreaterThanOrEqual(DEVICES - CAPACITY);
    });
    expect(valueOf(await scrape(), 'dcs_cache_capacity', { cache: 'device_snapshots' })).toBe(CAPACITY);
  });

  it('a gateway whose entry went is served as before, and comes back in as the most recent', async () => {
    const first = devices[0];
    // The first was pushed out by the 129 polled after it; read from the database, it answers the same.
    const before = valueOf(await scrape(), 'dcs_cache_evictions_total', { cache: 'device_snapshots' });
    const evicted = await pollConfig(first);
    expect(evicted.response.status).toBe(200);
    expect(evicted.data).toEqual(firstAnswer);
    // Reading it back in made room: one more eviction, the count stays at the capacity.
    const after = await scrape();
    expect(valueOf(after, 'dcs_cache_entries', { cache: 'device_snapshots' })).toBe(CAPACITY);
    expect(valueOf(after, 'dcs_cache_evictions_total', { cache: 'device_snapshots' })).toBe(before + 1);
    // Used last, it is not the next to go: polling it again evicts nothing.
    expect((await pollConfig(first)).response.status).toBe(200);
    expect(valueOf(await scrape(), 'dcs_cache_evictions_total', { cache: 'device_snapshots' })).toBe(before + 1);
  });

  it('alert rules read on upload: bounded the same way', async () => {
    const now = Date.now();
    for (const device of devices) {
      const { response } = await ingest(t.api, device.accessToken, [{ ts: iso(now - 60_000), metrics: { soc: 80, voltage: 13.1 } }]);
      expect(response.status).toBe(200);
    }
    // Alerts are evaluated after the upload is answered: counted once all of them ran.
    await eventually(async () => {
      const samples = await scrape();
      expect(valueOf(samples, 'dcs_cache_evictions_total', { cache: 'alert_rules' })).toBeGreaterThanOrEqual(DEVICES - CAPACITY);
      expect(valueOf(samples, 'dcs_cache_entries', { cache: 'alert_rules' })).toBe(CAPACITY);
    });
  });

  it('every cache is named with its capacity', async () => {
    const samples = await scrape();
    const names = samples.filter((sample) => sample.name === 'dcs_cache_capacity').map((sample) => sample.labels.cache);
    expect(names.sort()).toEqual(['alert_rules', 'customer_sessions', 'device_snapshots', 'ota_battery_readings', 'ota_outcomes', 'rate_limit_windows', 'upload_blocks']);
    // Without REDIS_URL the failure limits count in memory, a window per subject, within their own bound.
    expect(valueOf(samples, 'dcs_cache_capacity', { cache: 'rate_limit_windows' })).toBe(100_000);
    expect(valueOf(samples, 'dcs_cache_entries', { cache: 'rate_limit_windows' })).toBeGreaterThanOrEqual(DEVICES);
    expect(valueOf(samples, 'dcs_cache_capacity', { cache: 'customer_sessions' })).toBe(20_000);
  });
});
