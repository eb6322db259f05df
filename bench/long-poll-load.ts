import type { ChildProcess } from 'node:child_process';
import { ChildProcessClient } from './child-client.js';
import type { LiveFleet } from './workloads.js';

/** S9's gateways holding long polls, and the commands sent to them (bench/long-poll-client.ts does the work, in a process of its own). */
export interface LongPollSpec {
  /** `waitSec` of every long poll (the longest the service allows: 30). */
  waitSec: number;
  /** One command (`ping`) every this many ms from the warm-up on, each to a random gateway with none in flight; null: no command, the polls only wait. */
  commandIntervalMs: number | null;
  /** Also run the variant's load on the service without the long polls (target 'service'), in the same rounds, for with ÷ without. */
  compareWithout: boolean;
}

/** What the long-poll client sets up: the service, the gateways (device token, and their operator's token to send them commands). */
export interface LongPollClientSetup {
  url: string;
  gateways: Array<{ deviceId: string; token: string; operatorToken: string }>;
  waitSec: number;
  commandIntervalMs: number | null;
}

/** Of one run's measured period; latencies in ms from the moment the dashboard's send left the client. */
export interface LongPollStats {
  /** Gateways holding a long poll when the measured period began (the others between two polls: a command, or the wait ran out). */
  held: number;
  /** Seconds it took to open them all (a first short poll each, then the long one), before the warm-up. */
  openSeconds: number;
  /** Gateways whose opening failed (the short poll did not answer 200). */
  openFailures: number;
  /** Commands sent in the measured period, and those the dashboard route did not answer 201. */
  commands: number;
  sendFailures: number;
  /** The POST's own answer (201), from sending. */
  sendP50Ms: number;
  sendP99Ms: number;
  /** Send → the long poll's answer carrying the command arrives at its gateway. Infinity: never within the grace. */
  deliveries: number;
  deliveryP50Ms: number;
  deliveryP99Ms: number;
  deliveryMaxMs: number;
  /** Send → the gateway's result (`succeeded`) answered 200: the round trip the dashboard sees. Infinity: never within the grace. */
  answers: number;
  answerP50Ms: number;
  answerP99Ms: number;
  answerMaxMs: number;
  /** Long polls answered during the measured period: 200 (a command or a change), 304 (the wait ran out), errors. */
  polls200: number;
  polls304: number;
  pollErrors: number;
  /** Of the 304s, those answered well before the wait ran out (more than 1 s early): the service let a poll go without a reason. */
  early304: number;
  /** Results the service did not answer 200. */
  resultFailures: number;
}

export type ToLongPollClient = { type: 'setup'; setup: LongPollClientSetup } | { type: 'send' } | { type: 'measure' } | { type: 'stop'; graceMs: number } | { type: 'close' };
export type FromLongPollClient = { type: 'opened'; held: number; failures: number } | { type: 'stats'; stats: LongPollStats } | { type: 'failed'; message: string };

/** How long the client waits for the commands of the measured period once it ended: 5 × the 1 s target. */
export const COMMAND_GRACE_MS = 5000;

/**
 * The parent's side of bench/long-poll-client.ts: a child process, so that 1,000 held requests
 * and their answers do not run on autocannon's event loop (S1's load generator stays the same with
 * and without them), and send, delivery and result are timed on one clock. Its CPU is counted apart.
 */
export class LongPollClient extends ChildProcessClient<ToLongPollClient, FromLongPollClient> {
  private constructor(child: ChildProcess) {
    super(child, 'long-poll client');
  }

  /** Starts the client and opens one long poll per gateway of `gateways`; no command is sent yet. */
  static async start(url: string, gateways: LiveFleet, spec: LongPollSpec): Promise<{ client: LongPollClient; held: number; failures: number }> {
    const client = new LongPollClient(ChildProcessClient.forkScript('long-poll-client.js'));
    client.send({
      type: 'setup',
      setup: {
        url,
        gateways: gateways.devices.map((device) => ({ deviceId: device.deviceId, token: gateways.deviceTokens[device.index], operatorToken: gateways.customerTokens[device.ownerIndex] })),
        waitSec: spec.waitSec,
        commandIntervalMs: spec.commandIntervalMs,
      },
    });
    const opened = await client.reply('opened');
    return { client, held: opened.held, failures: opened.failures };
  }

  /** Commands start (before the warm-up); the polls stay held meanwhile. */
  startSending(): void {
    this.send({ type: 'send' });
  }

  /** The measured period begins: counters start from zero. */
  measure(): void {
    this.send({ type: 'measure' });
  }

  /** The measured period ended: no more commands; the figures once its commands were answered (at most COMMAND_GRACE_MS). */
  async stop(): Promise<LongPollStats> {
    this.send({ type: 'stop', graceMs: COMMAND_GRACE_MS });
    return (await this.reply('stats')).stats;
  }
}
