/**
 * `npm run bench -- --fleet N`: does one instance's memory grow with the fleet? N distinct gateways,
 * never seen before, each register, log in, poll config and OTA and upload once through one service
 * process, then all of them again as on their next boot (log in with the secret the registration
 * gave, poll, upload: a registered gateway does not register again). The service's RSS is read at rest, after each pass and at its peak: the bytes it
 * keeps per gateway, and whether the second pass grew it. Bounds checked: the second pass adds at
 * most 10 % to the RSS after the first, and the peak stays within 300 MB.
 */
import { peakRssKb, rssKb, type MachineInfo } from './proc-stats.js';

/** Gateways in flight at once: each runs its five requests one after another, as a gateway does. */
const CONCURRENCY = 32;
export const FLEET_BOUNDS = { secondPassGrowth: 0.1, peakRssMb: 300 } as const;

export interface FleetPass {
  seconds: number;
  requests: number;
  /** Answers other than 2xx (304 included as success), by "request status". */
  failures: Record<string, number>;
  rssMb: number;
}

export interface FleetResult {
  gateways: number;
  restRssMb: number;
  passes: FleetPass[];
  peakRssMb: number;
  bytesPerGateway: number;
  secondPassGrowth: number;
  /** dcs_cache_entries after the second pass, by cache. */
  cacheEntries: Record<string, number>;
  withinBounds: boolean;
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** RSS once the heap has had a moment to collect what the pass left (the service runs with its production flags, no forced GC). */
async function settledRssMb(pid: number): Promise<number> {
  await settle(5000);
  return rssKb(pid) / 1024;
}

async function call(url: string, init: RequestInit, failures: Record<string, number>, label: string): Promise<unknown> {
  const response = await fetch(url, init);
  const body = response.status === 304 ? null : await response.text();
  if (response.status >= 300 && response.status !== 304) {
    const key = `${label} ${response.status}`;
    failures[key] = (failures[key] ?? 0) + 1;
    return null;
  }
  return body ? (JSON.parse(body) as unknown) : null;
}

/** One gateway's turn; answers the requests it made. `secrets` holds what registration gave, for the second pass. */
async function gateway(baseUrl: string, deviceId: string, secrets: Map<string, string>, nowMs: number, failures: Record<string, number>): Promise<number> {
  const json = { 'content-type': 'application/json' };
  let requests = 0;
  if (!secrets.has(deviceId)) {
    requests += 1;
    const registered = (await call(
      `${baseUrl}/api/v1/device/register`,
      { method: 'POST', headers: json, body: JSON.stringify({ deviceId, hardwareId: 'hw-fleet', firmwareVersion: '0.1.3' }) },
      failures,
      'register',
    )) as { deviceSecret?: string } | null;
    if (!registered?.deviceSecret) return requests;
    secrets.set(deviceId, registered.deviceSecret);
  }
  requests += 1;
  const login = (await call(
    `${baseUrl}/api/v1/device/login`,
    { method: 'POST', headers: json, body: JSON.stringify({ deviceId, deviceSecret: secrets.get(deviceId) }) },
    failures,
    'login',
  )) as { accessToken?: string } | null;
  if (!login?.accessToken) return requests;
  const auth = { authorization: `Bearer ${login.accessToken}` };
  await call(`${baseUrl}/api/v1/device/config`, { headers: auth }, failures, 'config');
  await call(`${baseUrl}/api/v1/ota/latest`, { headers: auth }, failures, 'ota');
  const records = [{ ts: new Date(nowMs).toISOString(), batteryId: 'main', metrics: { voltage: 13.1, current: -1.2, soc: 80, temperature: 21 } }];
  await call(`${baseUrl}/api/v1/telemetry`, { method: 'POST', headers: { ...json, ...auth }, body: JSON.stringify({ records }) }, failures, 'telemetry');
  return requests + 3;
}

async function pass(baseUrl: string, ids: string[], secrets: Map<string, string>, pid: number, passIndex: number, log: (line: string) => void): Promise<FleetPass> {
  const failures: Record<string, number> = {};
  const started = performance.now();
  let next = 0;
  let requests = 0;
  // Each pass uploads a record a second later than the one before, so the second is new data, not a duplicate.
  const nowMs = Date.now() - 60_000 + passIndex * 1000;
  const worker = async () => {
    while (next < ids.length) {
      const index = next++;
      const made = await gateway(baseUrl, ids[index], secrets, nowMs, failures);
      requests += made;
      if ((index + 1) % 10_000 === 0) log(`  pass ${passIndex + 1}: ${index + 1} gateways, RSS ${Math.round(rssKb(pid) / 1024)} MB`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  return { seconds, requests, failures, rssMb: await settledRssMb(pid) };
}

async function cacheEntries(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const entries: Record<string, number> = {};
  for (const match of text.matchAll(/^dcs_cache_entries\{cache="([^"]+)"\} (\S+)$/gm)) entries[match[1]] = Number(match[2]);
  return entries;
}

export async function runFleet(options: { baseUrl: string; metricsUrl: string; pid: number; gateways: number; log: (line: string) => void }): Promise<FleetResult> {
  const { baseUrl, metricsUrl, pid, gateways, log } = options;
  // Ids of this run only, so a reused database has never seen them.
  const run = Date.now().toString(36);
  const ids = Array.from({ length: gateways }, (_, i) => `fleet-${run}-${i}`);
  const restRssMb = await settledRssMb(pid);
  log(`Fleet: ${gateways.toLocaleString('en-US')} gateways, ${CONCURRENCY} at a time, two passes; RSS at rest ${Math.round(restRssMb)} MB.`);
  const passes: FleetPass[] = [];
  const secrets = new Map<string, string>();
  for (let index = 0; index < 2; index++) {
    const done = await pass(baseUrl, ids, secrets, pid, index, log);
    passes.push(done);
    log(`Pass ${index + 1}: ${done.requests.toLocaleString('en-US')} requests in ${done.seconds.toFixed(0)} s, RSS ${Math.round(done.rssMb)} MB, failures ${JSON.stringify(done.failures)}.`);
  }
  const peakRssMb = peakRssKb(pid) / 1024;
  const bytesPerGateway = ((passes[0].rssMb - restRssMb) * 2 ** 20) / gateways;
  const secondPassGrowth = (passes[1].rssMb - passes[0].rssMb) / passes[0].rssMb;
  const failed = passes.some((done) => Object.keys(done.failures).length > 0);
  return {
    gateways,
    restRssMb,
    passes,
    peakRssMb,
    bytesPerGateway,
    secondPassGrowth,
    cacheEntries: await cacheEntries(metricsUrl),
    withinBounds: !failed && secondPassGrowth <= FLEET_BOUNDS.secondPassGrowth && peakRssMb <= FLEET_BOUNDS.peakRssMb,
  };
}

export function renderFleetReport(machine: MachineInfo, settings: Record<string, string>, result: FleetResult): string {
  const mb = (value: number) => `${Math.round(value)} MB`;
  const lines = [
    '# Fleet: memory per gateway',
    '',
    `Machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memGiB} GiB, Linux ${machine.kernel}, Node ${machine.node}. Service settings: ${Object.entries(settings)
      .map(([name, value]) => `${name}=${value}`)
      .join(', ')}.`,
    '',
    `${result.gateways.toLocaleString('en-US')} distinct gateways, each: register, log in, poll config, poll OTA, upload one record; then all again as on their next boot (log in, poll, upload).`,
    '',
    '| | seconds | requests | req/s | RSS after | failures |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
    `| at rest | | | | ${mb(result.restRssMb)} | |`,
    ...result.passes.map(
      (done, index) =>
        `| pass ${index + 1} | ${done.seconds.toFixed(0)} | ${done.requests.toLocaleString('en-US')} | ${Math.round(done.requests / done.seconds).toLocaleString('en-US')} | ${mb(done.rssMb)} | ${
          Object.entries(done.failures)
            .map(([key, count]) => `${key} × ${count}`)
            .join(', ') || 'none'
        } |`,
    ),
    '',
    `- RSS kept per gateway after the first pass: **${Math.round(result.bytesPerGateway).toLocaleString('en-US')} bytes** ((after pass 1 − at rest) ÷ gateways).`,
    `- Second pass: RSS ${result.secondPassGrowth >= 0 ? '+' : ''}${(result.secondPassGrowth * 100).toFixed(1)} % over the first (bound: ≤ ${FLEET_BOUNDS.secondPassGrowth * 100} %).`,
    `- Peak RSS: ${mb(result.peakRssMb)} (bound: ≤ ${FLEET_BOUNDS.peakRssMb} MB).`,
    `- Cache entries after the second pass: ${Object.entries(result.cacheEntries)
      .map(([name, count]) => `${name} ${count.toLocaleString('en-US')}`)
      .join(', ')}.`,
    `- ${result.withinBounds ? 'Within the bounds.' : '**Outside the bounds** (or requests failed).'}`,
    '',
  ];
  return lines.join('\n');
}
