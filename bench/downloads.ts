/**
 * `npm run bench -- --downloads [N]`: firmware images served by the service. N gateways (default
 * 200) are offered a signed 4 MiB release whose image the service keeps, and download it all at
 * once from one instance, each at an ESP32's pace (256 kB/s), over and over for the measured time;
 * half of them lose the connection at a random point of every download and resume with Range and
 * If-Range. Every image is checked
 * whole (SHA-256). Beside them, single-record uploads (S1's request) from 50 connections, measured
 * the same time without the downloads first: the ratio says what the downloads cost ingest. The
 * service's peak RSS covers the downloads. Bounds: every image whole, peak RSS ≤ 250 MB, uploads
 * beside ≥ 0.8 × alone. Gateways honour 503's Retry-After (FIRMWARE_MAX_CONCURRENT_DOWNLOADS,
 * default 100, is below N on purpose).
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import autocannon from 'autocannon';
import { firmwareManifest } from '../src/modules/ota/domain/firmware-manifest.js';
import { peakRssKb, resetPeakRss, rssKb, type MachineInfo } from './proc-stats.js';

export const DOWNLOAD_BOUNDS = { peakRssMb: 250, uploadsBesideRatio: 0.8 } as const;
const IMAGE_BYTES = 4 * 1024 * 1024;
const UPLOAD_CONNECTIONS = 50;
/** How fast a gateway takes the bytes in: an ESP32's OTA over Wi-Fi writes flash at a few hundred kB/s. */
const GATEWAY_BYTES_PER_SEC = 256 * 1024;

export interface DownloadsResult {
  gateways: number;
  imageBytes: number;
  durationSec: number;
  downloads: { whole: number; corrupt: number; cut: number; resumed: number; refused503: number; otherFailures: Record<string, number> };
  /** MB/s of image bytes sent to the gateways. */
  throughputMBps: number;
  /** Seconds per download, each from its first request to its last byte: median and p99. */
  downloadSec: { p50: number; p99: number };
  uploads: { aloneReqPerSec: number; besideReqPerSec: number; ratio: number; aloneP99Ms: number; besideP99Ms: number; non2xx: number };
  restRssMb: number;
  peakRssMb: number;
  withinBounds: boolean;
}

interface Options {
  baseUrl: string;
  pid: number;
  gateways: number;
  durationSec: number;
  adminEmail: string;
  adminPassword: string;
  log: (message: string) => void;
}

const json = { 'content-type': 'application/json' };

async function ok<T>(response: Response, what: string): Promise<T> {
  if (response.status >= 300) throw new Error(`${what} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  return (await response.json()) as T;
}

const quantile = (sorted: number[], q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);

/** Publishes a signed release for `hardwareId` and uploads its image; answers its id and the image. */
async function hostedRelease(baseUrl: string, admin: { authorization: string }, hardwareId: string): Promise<{ releaseId: string; image: Buffer; sha256: string }> {
  const image = randomBytes(IMAGE_BYTES);
  const sha256 = createHash('sha256').update(image).digest('hex');
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const keyId = `bench-${randomBytes(4).toString('hex')}`;
  await ok(await fetch(`${baseUrl}/api/v1/admin/firmware/signing-keys`, { method: 'POST', headers: { ...json, ...admin }, body: JSON.stringify({ keyId, publicKey: publicKey.export({ format: 'pem', type: 'spki' }) }) }), 'registering the key');
  const version = `9.${Date.now() % 1_000_000}.0`;
  const signature = sign(null, Buffer.from(firmwareManifest({ version, hardwareId, sha256, size: IMAGE_BYTES, minFromVersion: null })), privateKey).toString('base64');
  const release = await ok<{ id: string }>(
    await fetch(`${baseUrl}/api/v1/admin/firmware`, { method: 'POST', headers: { ...json, ...admin }, body: JSON.stringify({ version, hardwareId, sha256, size: IMAGE_BYTES, signature, signingKeyId: keyId }) }),
    'publishing',
  );
  await ok(await fetch(`${baseUrl}/api/v1/admin/firmware/${release.id}/image`, { method: 'PUT', headers: { ...admin, 'content-type': 'application/octet-stream' }, body: image }), 'uploading the image');
  return { releaseId: release.id, image, sha256 };
}

/** Registers a gateway on an older version and has it poll /ota/latest (the offer is recorded). */
async function offeredGateway(baseUrl: string, deviceId: string, hardwareId: string): Promise<string> {
  const registered = await ok<{ accessToken: string }>(
    await fetch(`${baseUrl}/api/v1/device/register`, { method: 'POST', headers: json, body: JSON.stringify({ deviceId, hardwareId, firmwareVersion: '0.1.3' }) }),
    `registering ${deviceId}`,
  );
  await ok(await fetch(`${baseUrl}/api/v1/ota/latest`, { headers: { authorization: `Bearer ${registered.accessToken}` } }), 'polling OTA');
  return registered.accessToken;
}

/**
 * One download as a gateway does it: from `from` on (a resume: Range and If-Range), retrying after
 * Retry-After on 503; `cutAt` (bytes of this attempt) drops the connection there. Answers the bytes
 * it got; counts what happened.
 */
async function fetchImage(url: string, token: string, etag: string, cutAt: number | null, stats: DownloadsResult['downloads'], received: Buffer[], from: number): Promise<number> {
  for (;;) {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (from > 0) Object.assign(headers, { range: `bytes=${from}-`, 'if-range': etag });
    const controller = new AbortController();
    const response = await fetch(url, { headers, signal: controller.signal });
    if (response.status === 503) {
      stats.refused503 += 1;
      await response.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get('retry-after') ?? 1) * 1000));
      continue;
    }
    if (response.status !== 200 && response.status !== 206) {
      stats.otherFailures[String(response.status)] = (stats.otherFailures[String(response.status)] ?? 0) + 1;
      await response.arrayBuffer();
      return from;
    }
    const reader = response.body!.getReader();
    const began = Date.now();
    let got = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return from + got;
      received.push(Buffer.from(value));
      got += value.length;
      // Reading no faster than a gateway writes flash: TCP holds the rest back.
      const ahead = (got / GATEWAY_BYTES_PER_SEC) * 1000 - (Date.now() - began);
      if (ahead > 0) await new Promise((resolve) => setTimeout(resolve, ahead));
      if (cutAt !== null && got >= cutAt) {
        controller.abort();
        stats.cut += 1;
        return from + got;
      }
    }
  }
}

export async function runDownloads(options: Options): Promise<DownloadsResult> {
  const { baseUrl, pid, gateways, durationSec, log } = options;
  const login = await ok<{ accessToken: string }>(
    await fetch(`${baseUrl}/api/v1/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ email: options.adminEmail, password: options.adminPassword }) }),
    'the administrator logging in',
  );
  const admin = { authorization: `Bearer ${login.accessToken}` };
  const hardwareId = `hw-dl-${randomBytes(3).toString('hex')}`;
  const { releaseId, sha256 } = await hostedRelease(baseUrl, admin, hardwareId);
  const tokens: string[] = [];
  for (let i = 0; i < gateways; i++) tokens.push(await offeredGateway(baseUrl, `dl-${hardwareId}-${i}`, hardwareId));
  log(`Release ${releaseId}: ${IMAGE_BYTES} bytes kept by the service, offered to ${gateways} gateways.`);

  let sequence = 0;
  const uploads = (seconds: number) =>
    autocannon({
      url: baseUrl,
      connections: UPLOAD_CONNECTIONS,
      duration: seconds,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/telemetry',
          setupRequest: (request) => {
            sequence += 1;
            const token = tokens[sequence % tokens.length];
            const ts = new Date(Date.UTC(2026, 0, 1) + sequence * 1000).toISOString();
            return { ...request, headers: { ...json, authorization: `Bearer ${token}` }, body: JSON.stringify({ records: [{ ts, batteryId: 'main', metrics: { soc: 80, voltage: 13.1 } }] }) };
          },
        },
      ],
    });
  log(`Uploads alone: ${UPLOAD_CONNECTIONS} connections, ${durationSec} s…`);
  const alone = await uploads(durationSec);
  const restRssMb = rssKb(pid) / 1024;

  const stats: DownloadsResult['downloads'] = { whole: 0, corrupt: 0, cut: 0, resumed: 0, refused503: 0, otherFailures: {} };
  const seconds: number[] = [];
  let bytesSent = 0;
  resetPeakRss(pid);
  const started = Date.now();
  const deadline = started + durationSec * 1000;
  const url = `${baseUrl}/api/v1/device/firmware/${releaseId}/image`;
  const etag = `"${sha256}"`;
  const gatewayLoop = async (index: number) => {
    const cuts = index % 2 === 0;
    while (Date.now() < deadline) {
      const began = Date.now();
      const received: Buffer[] = [];
      let have = await fetchImage(url, tokens[index], etag, cuts ? 1 + Math.floor(Math.random() * (IMAGE_BYTES - 2)) : null, stats, received, 0);
      while (have > 0 && have < IMAGE_BYTES) {
        stats.resumed += 1;
        const before = have;
        have = await fetchImage(url, tokens[index], etag, null, stats, received, have);
        if (have === before) break;
      }
      const image = Buffer.concat(received);
      bytesSent += image.length;
      if (image.length === IMAGE_BYTES && createHash('sha256').update(image).digest('hex') === sha256) stats.whole += 1;
      else stats.corrupt += 1;
      seconds.push((Date.now() - began) / 1000);
    }
  };
  log(`${gateways} gateways downloading for ${durationSec} s (half cut each download at a random byte and resume), uploads beside…`);
  const [beside] = await Promise.all([uploads(durationSec), Promise.all(tokens.map((_, index) => gatewayLoop(index)))]);
  const elapsedSec = (Date.now() - started) / 1000;
  const peakRssMb = peakRssKb(pid) / 1024;
  seconds.sort((a, b) => a - b);
  const ratio = beside.requests.average / alone.requests.average;
  const result: DownloadsResult = {
    gateways,
    imageBytes: IMAGE_BYTES,
    durationSec: elapsedSec,
    downloads: stats,
    throughputMBps: bytesSent / 1e6 / elapsedSec,
    downloadSec: { p50: quantile(seconds, 0.5), p99: quantile(seconds, 0.99) },
    uploads: {
      aloneReqPerSec: alone.requests.average,
      besideReqPerSec: beside.requests.average,
      ratio,
      aloneP99Ms: alone.latency.p99,
      besideP99Ms: beside.latency.p99,
      non2xx: alone.non2xx + beside.non2xx,
    },
    restRssMb,
    peakRssMb,
    withinBounds: stats.corrupt === 0 && stats.whole > 0 && peakRssMb <= DOWNLOAD_BOUNDS.peakRssMb && ratio >= DOWNLOAD_BOUNDS.uploadsBesideRatio,
  };
  return result;
}

export function renderDownloadsReport(machine: MachineInfo, settings: Record<string, string>, result: DownloadsResult): string {
  const r = (value: number, digits = 1) => value.toLocaleString('en-US', { maximumFractionDigits: digits });
  const d = result.downloads;
  return [
    `# Firmware downloads (${new Date().toISOString()})`,
    '',
    `- Machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memGiB} GiB, Linux ${machine.kernel}, Node ${machine.node}. Load generator, service and PostgreSQL share the CPUs.`,
    `- Settings: ${Object.entries(settings).map(([name, value]) => `${name}=${value}`).join(', ')}.`,
    `- ${result.gateways} gateways, a ${r(result.imageBytes / 1024 / 1024)} MiB signed image kept by the service, each read at ${GATEWAY_BYTES_PER_SEC / 1024} kB/s; half of them cut every download at a random byte and resume with Range.`,
    '',
    '| figure | value | bound |',
    '| --- | ---: | --- |',
    `| downloads whole (SHA-256 checked) | ${d.whole} | every one |`,
    `| downloads corrupt or incomplete | ${d.corrupt} | 0 |`,
    `| connections cut, then resumed with Range | ${d.cut} cut, ${d.resumed} resumes | |`,
    `| answered 503 (slots taken), retried after Retry-After | ${d.refused503} | |`,
    `| other failures | ${JSON.stringify(d.otherFailures)} | none |`,
    `| image bytes sent | ${r(result.throughputMBps)} MB/s over ${r(result.durationSec)} s | |`,
    `| seconds per download, p50 / p99 | ${r(result.downloadSec.p50, 2)} / ${r(result.downloadSec.p99, 2)} | |`,
    `| uploads (S1's request) alone / beside the downloads | ${r(result.uploads.aloneReqPerSec, 0)} / ${r(result.uploads.besideReqPerSec, 0)} req/s: ${r(result.uploads.ratio, 2)} × | ≥ ${DOWNLOAD_BOUNDS.uploadsBesideRatio} × |`,
    `| uploads p99 alone / beside | ${r(result.uploads.aloneP99Ms, 0)} / ${r(result.uploads.besideP99Ms, 0)} ms (non-2xx ${result.uploads.non2xx}) | |`,
    `| service RSS before / peak during the downloads | ${r(result.restRssMb, 0)} / ${r(result.peakRssMb, 0)} MB | ≤ ${DOWNLOAD_BOUNDS.peakRssMb} MB |`,
    '',
    result.withinBounds ? 'Within bounds.' : '**Outside the bounds.**',
    '',
  ].join('\n');
}
