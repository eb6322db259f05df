import type { ChildProcess } from 'node:child_process';
import { ChildProcessClient } from './child-client.js';
import type { LiveFleet } from './workloads.js';

/** S6's subscribers and probes (bench/stream-client.ts does the work, in a process of its own). */
export interface StreamSpec {
  /** Streams each viewer opens; every viewer owns one of the streamed devices. */
  perViewer: number;
  /** Of those, how many ask for `?deviceId=` (a device page); the others take all the account's devices (the overview). */
  narrowedPerViewer: number;
  /** One probe record every this many ms, round robin over the streamed devices, in runs with and without subscribers. */
  probeIntervalMs: number;
}

/** What the stream client sets up: the service, the streams to open, the devices to probe. */
export interface StreamClientSetup {
  url: string;
  viewers: Array<{ token: string; deviceId: string }>;
  /** 0: no streams (the run without subscribers), probes only. */
  perViewer: number;
  narrowedPerViewer: number;
  probes: Array<{ token: string; deviceId: string }>;
  probeIntervalMs: number;
}

/** Of one run's measured period; latencies in ms, from the probe's ingest answer to the event at a subscriber. */
export interface StreamStats {
  /** Streams open when the measured period began, and opens that were refused or failed. */
  streams: number;
  refused: number;
  /** Why the refused ones were: status or error → count. */
  refusals: Record<string, number>;
  /** Seconds it took to open them all (before the warm-up). */
  openSeconds: number;
  /** Streams that ended during the measured period without the client closing them (the service dropped or ended them). */
  closedByServer: number;
  /** `event: telemetry` messages all subscribers received in the measured period, and per second. */
  telemetryEvents: number;
  eventsPerSec: number;
  probes: number;
  probesAcked: number;
  /** Probes answered other than 2xx with accepted 1, or not answered. */
  probeFailures: number;
  probeAnswerP50Ms: number;
  probeAnswerP99Ms: number;
  /** One per acknowledged probe and stream that should carry it (its device's viewer's streams open at the answer). */
  deliveriesExpected: number;
  deliveriesReceived: number;
  /** Over every expected delivery; one not received within the grace counts as Infinity. Negative: the event came before the answer. */
  pushP50Ms: number;
  pushP99Ms: number;
  pushMaxMs: number;
}

export type ToStreamClient = { type: 'setup'; setup: StreamClientSetup } | { type: 'measure' } | { type: 'stop'; graceMs: number } | { type: 'close' };
export type FromStreamClient = { type: 'opened'; streams: number; refused: number } | { type: 'stats'; stats: StreamStats } | { type: 'failed'; message: string };

/** How long the client waits for the probes of the measured period once it ended: 5 × the 1 s target. */
export const PUSH_GRACE_MS = 5000;

/**
 * The parent's side of bench/stream-client.ts: a child process, so that parsing what 1,000 streams
 * receive does not run on autocannon's event loop (S1's load generator stays the same with and
 * without subscribers), and ack and receipt are timed on one clock. Its CPU is counted apart.
 */
export class StreamClient extends ChildProcessClient<ToStreamClient, FromStreamClient> {
  private constructor(child: ChildProcess) {
    super(child, 'stream client');
  }

  /** Starts the client, opens `perViewer` streams per viewer of `live` (none when `subscribe` is false) and starts the probes. */
  static async start(url: string, live: LiveFleet, spec: StreamSpec, subscribe: boolean): Promise<{ client: StreamClient; streams: number; refused: number }> {
    const client = new StreamClient(ChildProcessClient.forkScript('stream-client.js'));
    const viewers = live.customers.map((viewer) => {
      const device = live.devices.find((candidate) => candidate.ownerIndex === viewer.index);
      if (!device) throw new Error(`viewer ${viewer.index} owns no streamed device`);
      return { token: live.customerTokens[viewer.index], deviceId: device.deviceId };
    });
    client.send({
      type: 'setup',
      setup: {
        url,
        viewers,
        perViewer: subscribe ? spec.perViewer : 0,
        narrowedPerViewer: spec.narrowedPerViewer,
        probes: live.devices.map((device) => ({ token: live.deviceTokens[device.index], deviceId: device.deviceId })),
        probeIntervalMs: spec.probeIntervalMs,
      },
    });
    const opened = await client.reply('opened');
    return { client, streams: opened.streams, refused: opened.refused };
  }

  /** The measured period begins: counters start from zero. */
  measure(): void {
    this.send({ type: 'measure' });
  }

  /** The measured period ended: no more probes; the figures once its probes arrived (at most PUSH_GRACE_MS). */
  async stop(): Promise<StreamStats> {
    this.send({ type: 'stop', graceMs: PUSH_GRACE_MS });
    return (await this.reply('stats')).stats;
  }
}
