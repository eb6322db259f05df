/**
 * S6's stream client, a child process of the bench (bench/stream-load.ts starts it): opens the
 * dashboard streams (GET /api/v1/dashboard/stream, one plain keep-alive-less node:http request
 * each) and sends the probes, one record every probeIntervalMs with the marker metric `probe: n`,
 * round robin over the streamed devices. A probe's push latency is the time from its ingest
 * answer arriving here to its event arriving at each stream of its device, on this process's
 * clock. The bulk of the events (S1's load, from autocannon in the parent) is only counted.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FromStreamClient, StreamClientSetup, StreamStats, ToStreamClient } from './stream-load.js';

/** The probes' battery: S1's integrity check counts its own battery only (bench/workloads.ts). */
const PROBE_BATTERY = 'probe';
const MARKER = '"probe":';
const OPEN_CONCURRENCY = 50;
const OPEN_TIMEOUT_MS = 15_000;

interface Stream {
  deviceId: string;
  request: http.ClientRequest;
  open: boolean;
  /** The start of a message not complete yet. */
  rest: string;
}

interface Probe {
  deviceId: string;
  measured: boolean;
  answered: boolean;
  failed: boolean;
  sentAt: number;
  ackAt: number;
  /** The streams of its device open when the answer came. */
  expected: number;
  /** performance.now() of each arrival at a stream (may precede the answer). */
  receipts: number[];
}

const send = (message: FromStreamClient) => process.send?.(message);

const streams: Stream[] = [];
const streamsOf = new Map<string, Stream[]>();
const probes = new Map<number, Probe>();
let measuring = false;
let measureStart = 0;
let closing = false;
let counters = { openAtStart: 0, closedByServer: 0, telemetryEvents: 0 };

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function count(text: string, needle: string, end: number): number {
  let found = 0;
  for (let at = text.indexOf(needle); at >= 0 && at < end; at = text.indexOf(needle, at + needle.length)) found += 1;
  return found;
}

/** Complete messages only: counts the telemetry events and notes every probe marker. */
function received(stream: Stream, chunk: string): void {
  const at = performance.now();
  const text = stream.rest + chunk;
  const end = text.lastIndexOf('\n\n');
  if (end < 0) {
    stream.rest = text;
    return;
  }
  stream.rest = text.slice(end + 2);
  if (measuring) counters.telemetryEvents += count(text, 'event: telemetry\n', end);
  for (let marker = text.indexOf(MARKER); marker >= 0 && marker < end; marker = text.indexOf(MARKER, marker + MARKER.length)) {
    const probe = probes.get(Number.parseInt(text.slice(marker + MARKER.length, marker + MARKER.length + 12), 10));
    probe?.receipts.push(at);
  }
}

function openStream(base: URL, viewer: { token: string; deviceId: string }, narrowed: boolean, refusals: Record<string, number>): Promise<void> {
  return new Promise((resolve) => {
    let settled = false;
    const refuse = (reason: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      refusals[reason] = (refusals[reason] ?? 0) + 1;
      resolve();
    };
    const path = `/api/v1/dashboard/stream${narrowed ? `?deviceId=${encodeURIComponent(viewer.deviceId)}` : ''}`;
    const request = http.get({ host: base.hostname, port: base.port, path, agent: false, headers: { accept: 'text/event-stream', authorization: `Bearer ${viewer.token}` } }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        refuse(String(response.statusCode));
        return;
      }
      const stream: Stream = { deviceId: viewer.deviceId, request, open: true, rest: '' };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        received(stream, chunk);
        if (settled) return;
        // The first bytes are the service's opening comment: the stream is registered.
        settled = true;
        clearTimeout(timer);
        streams.push(stream);
        const own = streamsOf.get(stream.deviceId) ?? [];
        own.push(stream);
        streamsOf.set(stream.deviceId, own);
        resolve();
      });
      response.once('close', () => {
        if (stream.open && !closing && measuring) counters.closedByServer += 1;
        stream.open = false;
        refuse('closed before its first bytes');
      });
    });
    const timer: NodeJS.Timeout = setTimeout(() => {
      refuse('no answer within 15 s');
      request.destroy();
    }, OPEN_TIMEOUT_MS);
    request.on('error', (error: NodeJS.ErrnoException) => refuse(error.code ?? error.message));
  });
}

async function openStreams(setup: StreamClientSetup): Promise<Record<string, number>> {
  const base = new URL(setup.url);
  const refusals: Record<string, number> = {};
  const wanted = setup.viewers.flatMap((viewer) => Array.from({ length: setup.perViewer }, (_, k) => ({ viewer, narrowed: k < setup.narrowedPerViewer })));
  let next = 0;
  const worker = async () => {
    while (next < wanted.length) {
      const { viewer, narrowed } = wanted[next++];
      await openStream(base, viewer, narrowed, refusals);
    }
  };
  await Promise.all(Array.from({ length: OPEN_CONCURRENCY }, worker));
  return refusals;
}

function startProbes(setup: StreamClientSetup): () => void {
  const base = new URL(setup.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  let sequence = 0;
  const timer = setInterval(() => {
    sequence += 1;
    const n = sequence;
    const device = setup.probes[(n - 1) % setup.probes.length];
    const probe: Probe = { deviceId: device.deviceId, measured: measuring, answered: false, failed: false, sentAt: performance.now(), ackAt: 0, expected: 0, receipts: [] };
    probes.set(n, probe);
    const body = JSON.stringify({ records: [{ ts: new Date().toISOString(), batteryId: PROBE_BATTERY, metrics: { probe: n } }] });
    const request = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: 'POST',
        path: '/api/v1/telemetry',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${device.token}` },
      },
      (response) => {
        probe.ackAt = performance.now();
        probe.expected = (streamsOf.get(probe.deviceId) ?? []).filter((stream) => stream.open).length;
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          probe.answered = true;
          const status = response.statusCode ?? 0;
          if (status < 200 || status >= 300 || !text.includes('"accepted":1')) probe.failed = true;
        });
      },
    );
    request.setTimeout(10_000, () => request.destroy(new Error('timeout')));
    request.on('error', () => {
      probe.answered = true;
      probe.failed = true;
    });
    request.end(body);
  }, setup.probeIntervalMs);
  // The agent stays: a probe still in flight is answered (the process exits on 'close').
  return () => clearInterval(timer);
}

async function stats(setup: StreamClientSetup, refusals: Record<string, number>, openSeconds: number, graceMs: number): Promise<StreamStats> {
  const measuredSec = (performance.now() - measureStart) / 1000;
  measuring = false;
  const events = counters.telemetryEvents;
  const closedByServer = counters.closedByServer;
  const measured = [...probes.values()].filter((probe) => probe.measured);
  const settled = (probe: Probe) => probe.answered && (probe.failed || probe.receipts.length >= probe.expected);
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline && !measured.every(settled)) await new Promise((resolve) => setTimeout(resolve, 50));

  const acked = measured.filter((probe) => probe.answered && !probe.failed);
  const answers = acked.map((probe) => probe.ackAt - probe.sentAt).sort((a, b) => a - b);
  const push: number[] = [];
  let expected = 0;
  let delivered = 0;
  for (const probe of acked) {
    expected += probe.expected;
    const receipts = probe.receipts.slice(0, probe.expected);
    delivered += receipts.length;
    for (const at of receipts) push.push(at - probe.ackAt);
    for (let missing = receipts.length; missing < probe.expected; missing++) push.push(Number.POSITIVE_INFINITY);
  }
  push.sort((a, b) => a - b);
  const round = (value: number) => (Number.isFinite(value) ? Math.round(value * 10) / 10 : value);
  return {
    streams: counters.openAtStart,
    refused: Object.values(refusals).reduce((sum, n) => sum + n, 0),
    refusals,
    openSeconds,
    closedByServer,
    telemetryEvents: events,
    eventsPerSec: events / Math.max(0.001, measuredSec),
    probes: measured.length,
    probesAcked: acked.length,
    probeFailures: measured.length - acked.length,
    probeAnswerP50Ms: round(percentile(answers, 50)),
    probeAnswerP99Ms: round(percentile(answers, 99)),
    deliveriesExpected: expected,
    deliveriesReceived: delivered,
    pushP50Ms: round(percentile(push, 50)),
    pushP99Ms: round(percentile(push, 99)),
    pushMaxMs: round(push.length > 0 ? push[push.length - 1] : Number.NaN),
  };
}

let setup: StreamClientSetup | undefined;
let refusals: Record<string, number> = {};
let openSeconds = 0;
let stopProbes: (() => void) | undefined;

async function handle(message: ToStreamClient): Promise<void> {
  switch (message.type) {
    case 'setup': {
      setup = message.setup;
      const began = performance.now();
      refusals = setup.perViewer > 0 ? await openStreams(setup) : {};
      openSeconds = Math.round((performance.now() - began) / 100) / 10;
      stopProbes = startProbes(setup);
      send({ type: 'opened', streams: streams.length, refused: Object.values(refusals).reduce((sum, n) => sum + n, 0) });
      return;
    }
    case 'measure':
      counters = { openAtStart: streams.filter((stream) => stream.open).length, closedByServer: 0, telemetryEvents: 0 };
      measureStart = performance.now();
      measuring = true;
      return;
    case 'stop': {
      if (!setup) throw new Error('stop before setup');
      stopProbes?.();
      send({ type: 'stats', stats: await stats(setup, refusals, openSeconds, message.graceMs) });
      return;
    }
    case 'close':
      closing = true;
      stopProbes?.();
      for (const stream of streams) stream.request.destroy();
      process.exit(0);
  }
}

process.on('message', (message: ToStreamClient) => {
  handle(message).catch((error: unknown) => send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
});
// The bench went away: so does this.
process.on('disconnect', () => process.exit(0));
