/**
 * `npm run bench -- --downloads [N]`: firmware images served by the service. N gateways (default
 * 200) are offered a signed 4 MiB release whose image the service keeps, and download it all at
 * once from one instance, each at an ESP32's pace (256 kB/s), over and over for the measured time;
 * half of them lose the connection at a random point of every download and resume with Range and
 * If-Range. Every image is checked whole (SHA-256). The gateways run in a child process
 * (bench/download-gateways.ts). Beside them, single-record uploads (S1's request) from 50
 * connections, measured for the same time without the downloads before and after: the ratio to
 * their mean says what the downloads cost ingest. The service's peak RSS covers the downloads.
 * Bounds: every image whole, peak RSS ≤ 250 MB, uploads beside ≥ 0.8 × alone. Gateways honour
 * 503's Retry-After (FIRMWARE_MAX_CONCURRENT_DOWNLOADS, default 100, is below N on purpose).
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import autocannon from 'autocannon';
import { firmwareManifest } from '../src/modules/ota/domain/firmware-manifest.js';
import type { ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { ChildProcessClient } from './child-client.js';
import { peakRssKb, postgresCpuUs, processCpuUs, resetPeakRss, rssKb, type MachineInfo } from './proc-stats.js';

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
  /** Alone: the mean of the runs before and after the downloads (both given). */
  uploads: { aloneReqPerSec: number; aloneBeforeAfterReqPerSec: [number, number]; besideReqPerSec: number; ratio: number; aloneP99Ms: number; besideP99Ms: number; non2xx: number };
  /** CPU seconds per second by process: the uploads alone, then with the downloads beside. */
  cpu: { alone: CpuShares; beside: CpuShares };
  restRssMb: number;
  peakRssMb: number;
  withinBounds: boolean;
}

interface Options {
  baseUrl: string;
  pid: number;
  postmasterPid: number;
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

export interface DownloadGatewaysSetup {
  url: string;
  tokens: string[];
  etag: string;
  sha256: string;
  imageBytes: number;
  bytesPerSec: number;
  durationSec: number;
}

export type DownloadGatewaysStats = DownloadsResult['downloads'] & { bytes: number; seconds: number[] };
export type ToDownloadGateways = { type: 'setup'; setup: DownloadGatewaysSetup } | { type: 'close' };
export type FromDownloadGateways = { type: 'stats'; stats: DownloadGatewaysStats } | { type: 'failed'; message: string };

/**
 * The parent's side of bench/download-gateways.ts: the gateways run in a process of their own, so
 * that their image bytes are not read on autocannon's event loop. Its CPU is counted apart.
 */
class DownloadGateways extends ChildProcessClient<ToDownloadGateways, FromDownloadGateways> {
  private constructor(child: ChildProcess) {
    super(child, 'download gateways');
  }

  /**
   * Starts the process at the lowest scheduling priority: the gateways stand for devices elsewhere,
   * and on a machine whose few cores the service, PostgreSQL and the upload load also share, their
   * receiving should not take the service's turn. What they use is still reported.
   */
  static start(): DownloadGateways {
    const gateways = new DownloadGateways(ChildProcessClient.forkScript('download-gateways.js'));
    setPriority(gateways.pid, 19);
    return gateways;
  }

  /** Every gateway downloads over and over until `setup.durationSec` is up; answers what happened. */
  async run(setup: DownloadGatewaysSetup): Promise<DownloadGatewaysStats> {
    this.send({ type: 'setup', setup });
    return (await this.reply('stats')).stats;
  }
}

/** CPU seconds per second of wall time, by process, over a phase. */
export interface CpuShares {
  service: number;
  postgres: number;
  loadGenerator: number;
  gateways: number;
}

function cpuMeter(pids: { service: number; postmaster: number; gateways?: number }): () => CpuShares {
  const read = () => {
    const own = process.cpuUsage();
    return {
      at: Date.now(),
      service: processCpuUs(pids.service),
      postgres: postgresCpuUs(pids.postmaster),
      loadGenerator: own.user + own.system,
      gateways: pids.gateways ? processCpuUs(pids.gateways) : 0,
    };
  };
  const before = read();
  return () => {
    const after = read();
    const wallUs = (after.at - before.at) * 1000;
    return {
      service: (after.service - before.service) / wallUs,
      postgres: (after.postgres - before.postgres) / wallUs,
      loadGenerator: (after.loadGenerator - before.loadGenerator) / wallUs,
      gateways: (after.gateways - before.gateways) / wallUs,
    };
  };
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
  const aloneCpu = cpuMeter({ service: pid, postmaster: options.postmasterPid });
  const before = await uploads(durationSec);
  const cpuAlone = aloneCpu();
  const restRssMb = rssKb(pid) / 1024;

  const gatewaysProcess = DownloadGateways.start();
  try {
    resetPeakRss(pid);
    log(`${gateways} gateways downloading for ${durationSec} s (half cut each download at a random byte and resume), uploads beside…`);
    const besideCpu = cpuMeter({ service: pid, postmaster: options.postmasterPid, gateways: gatewaysProcess.pid });
    const started = Date.now();
    let cpuBeside: CpuShares | undefined;
    const [beside, stats] = await Promise.all([
      // CPU over the uploads' time only: the downloads that are under way then finish after it.
      uploads(durationSec).then((result) => {
        cpuBeside = besideCpu();
        return result;
      }),
      gatewaysProcess.run({
        url: `${baseUrl}/api/v1/device/firmware/${releaseId}/image`,
        tokens,
        etag: `"${sha256}"`,
        sha256,
        imageBytes: IMAGE_BYTES,
        bytesPerSec: GATEWAY_BYTES_PER_SEC,
        durationSec,
      }),
    ]);
    const elapsedSec = (Date.now() - started) / 1000;
    const peakRssMb = peakRssKb(pid) / 1024;
    const { bytes, seconds, ...downloads } = stats;
    seconds.sort((a, b) => a - b);
    // Alone again once the downloads are over: the ratio is against the mean of before and after,
    // so that a drift of the machine or the growing table over the run does not read as their cost.
    log(`Uploads alone again: ${durationSec} s…`);
    const after = await uploads(durationSec);
    const aloneReqPerSec = (before.requests.average + after.requests.average) / 2;
    const ratio = beside.requests.average / aloneReqPerSec;
    const result: DownloadsResult = {
      gateways,
      imageBytes: IMAGE_BYTES,
      durationSec: elapsedSec,
      downloads,
      throughputMBps: bytes / 1e6 / elapsedSec,
      downloadSec: { p50: quantile(seconds, 0.5), p99: quantile(seconds, 0.99) },
      uploads: {
        aloneReqPerSec,
        aloneBeforeAfterReqPerSec: [before.requests.average, after.requests.average],
        besideReqPerSec: beside.requests.average,
        ratio,
        aloneP99Ms: Math.max(before.latency.p99, after.latency.p99),
        besideP99Ms: beside.latency.p99,
        non2xx: before.non2xx + beside.non2xx + after.non2xx,
      },
      cpu: { alone: cpuAlone, beside: cpuBeside! },
      restRssMb,
      peakRssMb,
      withinBounds: downloads.corrupt === 0 && downloads.whole > 0 && Object.keys(downloads.otherFailures).length === 0 && peakRssMb <= DOWNLOAD_BOUNDS.peakRssMb && ratio >= DOWNLOAD_BOUNDS.uploadsBesideRatio,
    };
    return result;
  } finally {
    await gatewaysProcess.close();
  }
}

export function renderDownloadsReport(machine: MachineInfo, settings: Record<string, string>, result: DownloadsResult): string {
  const r = (value: number, digits = 1) => value.toLocaleString('en-US', { maximumFractionDigits: digits });
  const d = result.downloads;
  const cpuRow = (cpu: CpuShares) => [cpu.service, cpu.postgres, cpu.loadGenerator].map((share) => r(share, 2)).join(' / ');
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
    `| uploads (S1's request) alone, before and after / beside the downloads | ${result.uploads.aloneBeforeAfterReqPerSec.map((value) => r(value, 0)).join(' and ')} / ${r(result.uploads.besideReqPerSec, 0)} req/s: ${result.uploads.ratio.toFixed(3)} × their mean | ≥ ${DOWNLOAD_BOUNDS.uploadsBesideRatio} × |`,
    `| uploads p99 alone (the worse) / beside | ${r(result.uploads.aloneP99Ms, 0)} / ${r(result.uploads.besideP99Ms, 0)} ms (non-2xx ${result.uploads.non2xx}) | |`,
    `| CPU (cores busy) alone: service / PostgreSQL / uploads' load generator | ${cpuRow(result.cpu.alone)} | |`,
    `| CPU beside: service / PostgreSQL / uploads' load generator / gateways | ${cpuRow(result.cpu.beside)} / ${r(result.cpu.beside.gateways, 2)} | |`,
    `| service RSS before / peak during the downloads | ${r(result.restRssMb, 0)} / ${r(result.peakRssMb, 0)} MB | ≤ ${DOWNLOAD_BOUNDS.peakRssMb} MB |`,
    '',
    result.withinBounds ? 'Within bounds.' : '**Outside the bounds.**',
    '',
  ].join('\n');
}
