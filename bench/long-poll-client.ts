/**
 * S9's long-poll client, a child process of the bench (bench/long-poll-load.ts starts it): 1,000
 * gateways, each on node:http keep-alive connections of one agent, holding
 * GET /api/v1/device/commands?waitSec=30 with the ETag of its last answer, as firmware would: a
 * 304 (the wait ran out) polls again at once; a 200 carrying commands is answered with each
 * command's result (`succeeded`, as a ping is) and then polls again. Once told to (unless the
 * variant sends none), it sends a `ping` every commandIntervalMs through the dashboard route, as the gateway's operator, to a
 * random gateway with no command of the bench in flight, and times on this process's clock the
 * send, the poll answer that delivers it and the result.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FromLongPollClient, LongPollClientSetup, LongPollStats, ToLongPollClient } from './long-poll-load.js';

const OPEN_CONCURRENCY = 50;
const RETRY_MS = 1000;
/** Commands the bench sends end long before the service's default hour: one left over expires soon. */
const COMMAND_TTL_SEC = 120;

interface Gateway {
  deviceId: string;
  token: string;
  operatorToken: string;
  etag: string | null;
  /** A long poll of this gateway is in flight (sent, not answered yet). */
  holding: boolean;
  /** A command of the bench is on its way to it (sent, its result not answered yet). */
  busy: boolean;
}

interface Sent {
  gateway: Gateway;
  measured: boolean;
  sentAt: number;
  ackAt: number;
  commandId: string | null;
  /** The send was answered other than 201, or the result other than 200: no more to wait for. */
  failed: boolean;
}

const send = (message: FromLongPollClient) => process.send?.(message);

let setup: LongPollClientSetup | undefined;
let base: URL;
let gateways: Gateway[] = [];
/** The gateways' polls and results (one connection per held poll) and the operators' sends. */
let pollAgent: http.Agent;
let sendAgent: http.Agent;
const sent: Sent[] = [];
/** When a command first reached its gateway, and when its result was answered, by commandId: a delivery may come before the send's own answer. */
const deliveredAt = new Map<string, number>();
const answeredAt = new Map<string, number>();
const resultPosted = new Set<string>();
let measuring = false;
let closing = false;
let stopSending: (() => void) | undefined;
let openSeconds = 0;
let openFailures = 0;
let counters = { held: 0, polls200: 0, polls304: 0, pollErrors: 0, early304: 0, resultFailures: 0 };

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function request(
  agent: http.Agent,
  options: { method: string; path: string; headers: Record<string, string>; body?: string; timeoutMs: number },
  done: (status: number, body: string, headers: http.IncomingHttpHeaders) => void,
  failed: () => void,
): void {
  const headers: Record<string, string | number> = { ...options.headers };
  if (options.body !== undefined) headers['content-length'] = Buffer.byteLength(options.body);
  // Exactly one outcome per request: an error may be reported on both the request and its response.
  let settled = false;
  const once = (outcome: () => void) => {
    if (settled || closing) return;
    settled = true;
    outcome();
  };
  const outgoing = http.request({ agent, host: base.hostname, port: base.port, method: options.method, path: options.path, headers }, (response) => {
    let text = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => (text += chunk));
    response.on('end', () => once(() => done(response.statusCode ?? 0, text, response.headers)));
    response.on('error', () => once(failed));
  });
  outgoing.setTimeout(options.timeoutMs, () => outgoing.destroy(new Error('timeout')));
  outgoing.on('error', () => once(failed));
  outgoing.end(options.body);
}

/** One poll of the gateway's commands; `waitSec` 0: a short poll (the first, to learn the ETag). */
function poll(gateway: Gateway, waitSec: number, opened?: (ok: boolean) => void): void {
  if (closing) return;
  const startedAt = performance.now();
  gateway.holding = waitSec > 0;
  request(
    pollAgent,
    {
      method: 'GET',
      path: `/api/v1/device/commands${waitSec > 0 ? `?waitSec=${waitSec}` : ''}`,
      headers: { authorization: `Bearer ${gateway.token}`, ...(gateway.etag ? { 'if-none-match': gateway.etag } : {}) },
      timeoutMs: (waitSec + 15) * 1000,
    },
    (status, body, headers) => {
      gateway.holding = false;
      const at = performance.now();
      if (status === 304) {
        if (measuring) {
          counters.polls304 += 1;
          if (at - startedAt < waitSec * 1000 - 1000) counters.early304 += 1;
        }
        poll(gateway, setup!.waitSec);
        return;
      }
      if (status !== 200) {
        if (measuring) counters.pollErrors += 1;
        opened?.(false);
        if (!opened) setTimeout(() => poll(gateway, setup!.waitSec), RETRY_MS);
        return;
      }
      if (measuring) counters.polls200 += 1;
      gateway.etag = typeof headers.etag === 'string' ? headers.etag : null;
      let commands: Array<{ commandId: string }> = [];
      try {
        commands = (JSON.parse(body) as { commands: Array<{ commandId: string }> }).commands;
      } catch {
        if (measuring) counters.pollErrors += 1;
      }
      for (const command of commands) if (!deliveredAt.has(command.commandId)) deliveredAt.set(command.commandId, at);
      opened?.(true);
      answer(gateway, commands).then(
        () => poll(gateway, setup!.waitSec),
        () => poll(gateway, setup!.waitSec),
      );
    },
    () => {
      gateway.holding = false;
      if (measuring) counters.pollErrors += 1;
      if (opened) opened(false);
      else setTimeout(() => poll(gateway, setup!.waitSec), RETRY_MS);
    },
  );
}

/** The gateway runs each command (a ping: nothing to do) and posts its result, once per command. */
async function answer(gateway: Gateway, commands: Array<{ commandId: string }>): Promise<void> {
  await Promise.all(
    commands
      .filter((command) => !resultPosted.has(command.commandId))
      .map(
        (command) =>
          new Promise<void>((resolve) => {
            resultPosted.add(command.commandId);
            const settle = (ok: boolean) => {
              if (ok) answeredAt.set(command.commandId, performance.now());
              else if (measuring) counters.resultFailures += 1;
              const own = sent.find((entry) => entry.commandId === command.commandId);
              if (own && !ok) own.failed = true;
              if (own) own.gateway.busy = false;
              resolve();
            };
            request(
              pollAgent,
              {
                method: 'POST',
                path: `/api/v1/device/commands/${encodeURIComponent(command.commandId)}/result`,
                headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.token}` },
                body: JSON.stringify({ status: 'succeeded' }),
                timeoutMs: 10_000,
              },
              (status) => settle(status === 200),
              () => settle(false),
            );
          }),
      ),
  );
}

async function open(): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < gateways.length) {
      const gateway = gateways[next++];
      const ok = await new Promise<boolean>((resolve) => poll(gateway, 0, resolve));
      if (!ok) openFailures += 1;
    }
  };
  await Promise.all(Array.from({ length: OPEN_CONCURRENCY }, worker));
}

function startSending(interval: number): () => void {
  const timer = setInterval(() => {
    let gateway: Gateway | undefined;
    for (let tries = 0; tries < 20 && !gateway; tries++) {
      const candidate = gateways[Math.floor(Math.random() * gateways.length)];
      if (!candidate.busy) gateway = candidate;
    }
    if (!gateway) return;
    gateway.busy = true;
    const entry: Sent = { gateway, measured: measuring, sentAt: performance.now(), ackAt: 0, commandId: null, failed: false };
    sent.push(entry);
    request(
      sendAgent,
      {
        method: 'POST',
        path: `/api/v1/dashboard/devices/${encodeURIComponent(gateway.deviceId)}/commands`,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.operatorToken}` },
        body: JSON.stringify({ type: 'ping', ttlSec: COMMAND_TTL_SEC }),
        timeoutMs: 10_000,
      },
      (status, body) => {
        entry.ackAt = performance.now();
        try {
          entry.commandId = status === 201 ? (JSON.parse(body) as { commandId: string }).commandId : null;
        } catch {
          entry.commandId = null;
        }
        if (entry.commandId === null) {
          entry.failed = true;
          gateway.busy = false;
        } else if (answeredAt.has(entry.commandId)) {
          gateway.busy = false;
        }
      },
      () => {
        entry.failed = true;
        gateway.busy = false;
      },
    );
  }, interval);
  return () => clearInterval(timer);
}

async function stats(graceMs: number): Promise<LongPollStats> {
  measuring = false;
  stopSending?.();
  const measured = sent.filter((entry) => entry.measured);
  const settled = (entry: Sent) => entry.failed || (entry.commandId !== null && answeredAt.has(entry.commandId));
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline && !measured.every(settled)) await new Promise((resolve) => setTimeout(resolve, 50));

  const accepted = measured.filter((entry) => entry.commandId !== null);
  const sends = accepted.map((entry) => entry.ackAt - entry.sentAt).sort((a, b) => a - b);
  const since = (times: Map<string, number>) =>
    accepted.map((entry) => (times.has(entry.commandId!) ? times.get(entry.commandId!)! - entry.sentAt : Number.POSITIVE_INFINITY)).sort((a, b) => a - b);
  const deliveries = since(deliveredAt);
  const answers = since(answeredAt);
  const round = (value: number) => (Number.isFinite(value) ? Math.round(value * 10) / 10 : value);
  const last = (values: number[]) => (values.length > 0 ? values[values.length - 1] : Number.NaN);
  return {
    held: counters.held,
    openSeconds,
    openFailures,
    commands: measured.length,
    sendFailures: measured.length - accepted.length,
    sendP50Ms: round(percentile(sends, 50)),
    sendP99Ms: round(percentile(sends, 99)),
    deliveries: accepted.filter((entry) => deliveredAt.has(entry.commandId!)).length,
    deliveryP50Ms: round(percentile(deliveries, 50)),
    deliveryP99Ms: round(percentile(deliveries, 99)),
    deliveryMaxMs: round(last(deliveries)),
    answers: accepted.filter((entry) => answeredAt.has(entry.commandId!)).length,
    answerP50Ms: round(percentile(answers, 50)),
    answerP99Ms: round(percentile(answers, 99)),
    answerMaxMs: round(last(answers)),
    polls200: counters.polls200,
    polls304: counters.polls304,
    pollErrors: counters.pollErrors,
    early304: counters.early304,
    resultFailures: counters.resultFailures,
  };
}

async function handle(message: ToLongPollClient): Promise<void> {
  switch (message.type) {
    case 'setup': {
      setup = message.setup;
      base = new URL(setup.url);
      gateways = setup.gateways.map((gateway) => ({ ...gateway, etag: null, holding: false, busy: false }));
      // One connection per held poll, kept alive across polls (the service keeps idle ones 72 s).
      pollAgent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
      sendAgent = new http.Agent({ keepAlive: true, maxSockets: 8 });
      const began = performance.now();
      await open();
      // Each opened gateway starts its long poll once its first answer is handled: wait until all have (at most 5 s).
      const opened = gateways.length - openFailures;
      for (let waited = 0; waited < 5000 && gateways.filter((gateway) => gateway.holding).length < opened; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      openSeconds = Math.round((performance.now() - began) / 100) / 10;
      send({ type: 'opened', held: gateways.filter((gateway) => gateway.holding).length, failures: openFailures });
      return;
    }
    case 'send':
      if (setup?.commandIntervalMs) stopSending = startSending(setup.commandIntervalMs);
      return;
    case 'measure':
      counters = { held: gateways.filter((gateway) => gateway.holding).length, polls200: 0, polls304: 0, pollErrors: 0, early304: 0, resultFailures: 0 };
      measuring = true;
      return;
    case 'stop':
      send({ type: 'stats', stats: await stats(message.graceMs) });
      return;
    case 'close':
      closing = true;
      stopSending?.();
      pollAgent?.destroy();
      sendAgent?.destroy();
      process.exit(0);
  }
}

process.on('message', (message: ToLongPollClient) => {
  handle(message).catch((error: unknown) => send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
});
// The bench went away: so does this.
process.on('disconnect', () => process.exit(0));
