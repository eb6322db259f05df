/**
 * The downloading gateways of `npm run bench -- --downloads`, a child process of the bench
 * (bench/downloads.ts starts it), so that their 20-odd MB/s of image bytes are not read on
 * autocannon's event loop: the uploads beside them are generated exactly as they are alone.
 *
 * Each gateway does what firmware does on node:http: downloads the image, hashing it as it comes
 * and taking it no faster than it could write flash (the socket is paused, TCP holds the rest back);
 * half of them drop the connection at a random byte of every download and resume with Range and
 * If-Range, hashing on where they stopped. A 503 is retried after its Retry-After.
 */
import { createHash, type Hash } from 'node:crypto';
import http from 'node:http';
import type { DownloadGatewaysSetup, DownloadGatewaysStats, FromDownloadGateways, ToDownloadGateways } from './downloads.js';

const send = (message: FromDownloadGateways) => process.send?.(message);

let stopping = false;

/** What one request of a download ended with: the bytes it added, or why it stopped. */
type Attempt = { kind: 'bytes'; got: number; cut: boolean } | { kind: 'refused'; retryAfterSec: number } | { kind: 'failed'; status: string };

/**
 * One request of a download, from byte `from` on (a resume when > 0), read at `bytesPerSec` into
 * `hash`; `cutAt` (bytes of this request) drops the connection there.
 */
function attempt(setup: DownloadGatewaysSetup, agent: http.Agent, token: string, from: number, cutAt: number | null, hash: Hash): Promise<Attempt> {
  const base = new URL(setup.url);
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (from > 0) Object.assign(headers, { range: `bytes=${from}-`, 'if-range': setup.etag });
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Attempt) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const request = http.get({ agent, host: base.hostname, port: base.port, path: base.pathname, headers }, (response) => {
      const status = response.statusCode ?? 0;
      if (status === 503) {
        response.resume();
        response.on('end', () => settle({ kind: 'refused', retryAfterSec: Number(response.headers['retry-after'] ?? 1) }));
        return;
      }
      if (status !== 200 && status !== 206) {
        response.resume();
        response.on('end', () => settle({ kind: 'failed', status: String(status) }));
        return;
      }
      const began = Date.now();
      let got = 0;
      response.on('data', (chunk: Buffer) => {
        if (settled) return;
        const take = cutAt !== null ? Math.min(chunk.length, cutAt - got) : chunk.length;
        hash.update(take === chunk.length ? chunk : chunk.subarray(0, take));
        got += take;
        if (cutAt !== null && got >= cutAt) {
          request.destroy();
          settle({ kind: 'bytes', got, cut: true });
          return;
        }
        // Taking the bytes no faster than a gateway writes flash: TCP holds the rest back meanwhile.
        const ahead = (got / setup.bytesPerSec) * 1000 - (Date.now() - began);
        if (ahead > 0) {
          response.pause();
          setTimeout(() => response.resume(), ahead);
        }
      });
      response.on('end', () => settle({ kind: 'bytes', got, cut: false }));
      response.on('error', () => settle({ kind: 'bytes', got, cut: false }));
    });
    request.setTimeout(60_000, () => request.destroy(new Error('timeout')));
    request.on('error', () => settle({ kind: 'failed', status: 'connection error' }));
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function run(setup: DownloadGatewaysSetup): Promise<DownloadGatewaysStats> {
  const stats: DownloadGatewaysStats = { whole: 0, corrupt: 0, cut: 0, resumed: 0, refused503: 0, otherFailures: {}, bytes: 0, seconds: [] };
  const deadline = Date.now() + setup.durationSec * 1000;
  const gateway = async (index: number) => {
    const token = setup.tokens[index];
    // Each gateway its own connection, as on the device; half of them drop it once per download.
    const own = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const cuts = index % 2 === 0;
    while (Date.now() < deadline && !stopping) {
      const began = Date.now();
      const hash = createHash('sha256');
      let have = 0;
      let cutAt: number | null = cuts ? 1 + Math.floor(Math.random() * (setup.imageBytes - 2)) : null;
      let failed = false;
      while (have < setup.imageBytes && !stopping) {
        if (have > 0) stats.resumed += 1;
        const outcome = await attempt(setup, own, token, have, cutAt, hash);
        if (outcome.kind === 'refused') {
          stats.refused503 += 1;
          if (have > 0) stats.resumed -= 1;
          await sleep(outcome.retryAfterSec * 1000);
          continue;
        }
        if (outcome.kind === 'failed') {
          stats.otherFailures[outcome.status] = (stats.otherFailures[outcome.status] ?? 0) + 1;
          failed = true;
          break;
        }
        have += outcome.got;
        if (outcome.cut) {
          stats.cut += 1;
          cutAt = null;
        } else if (outcome.got === 0) {
          failed = true;
          break;
        }
      }
      if (stopping) break;
      stats.bytes += have;
      if (!failed && have === setup.imageBytes && hash.digest('hex') === setup.sha256) stats.whole += 1;
      else stats.corrupt += 1;
      stats.seconds.push((Date.now() - began) / 1000);
    }
    own.destroy();
  };
  await Promise.all(setup.tokens.map((_, index) => gateway(index)));
  return stats;
}

process.on('message', (message: ToDownloadGateways) => {
  if (message.type === 'setup') {
    run(message.setup).then(
      (stats) => send({ type: 'stats', stats }),
      (error: unknown) => send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
  } else if (message.type === 'close') {
    stopping = true;
    process.exit(0);
  }
});
// The bench went away: so does this.
process.on('disconnect', () => process.exit(0));
