import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type autocannon from 'autocannon';

/** What a load run produced, whichever client drove it. */
export interface LoadOutcome {
  requests: number;
  durationSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  /** Connection errors and time-outs. */
  errors: number;
}

const TIMEOUT_MS = 10_000;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * Open-loop load at an even pace: request i is due at start + i / rate and leaves then, whether or
 * not earlier ones were answered, on one of `connections` keep-alive connections (when all are
 * busy it waits for one). Its latency runs from when it was due, so waiting counts.
 *
 * autocannon's overallRate is not this: it gives each connection a budget per second, so each
 * second's requests leave back to back at the start of the second and the rest of it is silent —
 * at "1,000 req/s" over 50 connections, a burst of 1,000 requests at 50 connections every second.
 */
export async function firePaced(url: string, connections: number, rate: number, request: autocannon.Request, durationSec: number): Promise<LoadOutcome> {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const total = Math.round(rate * durationSec);
  const inFlight = new Set<Promise<void>>();

  const send = (due: number) => {
    const context = {};
    const spec = typeof request.setupRequest === 'function' ? request.setupRequest({ ...request }, context) : request;
    const body = typeof spec.body === 'string' ? spec.body : undefined;
    const headers: Record<string, string | number> = { ...(spec.headers as Record<string, string>) };
    if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
    const done = new Promise<void>((resolve) => {
      const outgoing = http.request({ agent, host: target.hostname, port: target.port, method: spec.method ?? 'GET', path: spec.path ?? '/', headers, timeout: TIMEOUT_MS }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          latencies.push(performance.now() - due);
          if (status < 200 || status >= 300) non2xx += 1;
          if (typeof request.onResponse === 'function') request.onResponse(status, Buffer.concat(chunks).toString('utf8'), context, response.headers);
          resolve();
        });
      });
      outgoing.on('timeout', () => outgoing.destroy(new Error('timeout')));
      outgoing.on('error', () => {
        errors += 1;
        resolve();
      });
      outgoing.end(body);
    });
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };

  const start = performance.now();
  let sent = 0;
  await new Promise<void>((finish) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
      while (sent < due) send(start + (sent++ * 1000) / rate);
      if (sent < total) setTimeout(tick, 1);
      else finish();
    };
    tick();
  });
  await Promise.all(inFlight);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return { requests: latencies.length, durationSec, p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)), non2xx, errors };
}
