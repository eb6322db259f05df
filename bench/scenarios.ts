import type { ScenarioId } from './options.js';
import type { LongPollSpec } from './long-poll-load.js';
import type { StreamSpec } from './stream-load.js';
import {
  commandPollWorkload,
  customerLoginWorkload,
  deviceLoginWorkload,
  energyWorkload,
  gatewayFleetOf,
  historyWorkload,
  ingestWorkload,
  liveFleetOf,
  logUploadWorkload,
  organizationFleetOf,
  organizationListWorkload,
  pollWorkload,
  type Fleet,
  type IngestClock,
  type Workload,
} from './workloads.js';

/** One stream of requests inside a variant; several run at once in S5. */
export interface LoadSpec {
  name: string;
  connections: number;
  /** Requests per second over all connections, sent at an even pace (bench/paced.ts); unset: as fast as answered (autocannon). */
  overallRate?: number;
  /** POST /api/v1/telemetry: the run also reports what alert evaluation did (bench/measure.ts). */
  ingest?: boolean;
  workload(fleet: Fleet, clock: IngestClock): Workload;
}

export interface Variant {
  id: string;
  scenario: ScenarioId;
  title: string;
  /** The first load is the one the variant is about: its req/s and latency head the table. */
  loads: LoadSpec[];
  /** Count PostgreSQL transactions during the measured run (waits for the statistics to settle). */
  countTransactions?: boolean;
  /**
   * Also run against a second service process started with ALERTS_ENABLED=false (target
   * 'service-alerts-off'): the report gives alerting on ÷ off (target: ≥ 0.95 × for S1 and S2).
   */
  compareAlerting?: boolean;
  /**
   * Also run against a third service process started with BATTERY_ANALYTICS_ENABLED=false (target
   * 'service-batteries-off'): battery analytics on ÷ off (target: ≥ 0.95 × for S1 and S2).
   */
  compareBatteries?: boolean;
  /**
   * S6: run against the service alone, once with these streams open (target 'service-streams')
   * and once without (target 'service'), in the same rounds; probes in both (bench/stream-load.ts).
   */
  streams?: StreamSpec;
  /**
   * S9: run against the service alone with the 1,000 gateways holding long polls of their commands
   * (target 'service-long-polls'; commands sent to them if the spec says so) and, if the spec says
   * so, also without them (target 'service'), in the same rounds (bench/long-poll-load.ts).
   */
  longPolls?: LongPollSpec;
  /** Run against the service alone (target 'service'): the baseline has no such route (S11). */
  serviceOnly?: boolean;
}

const HOUR = 3_600_000;
const ingest = (recordsPerRequest: number) => (fleet: Fleet, clock: IngestClock) => ingestWorkload(fleet, clock, recordsPerRequest);

const S1: Variant[] = [
  {
    id: 'S1-c50',
    scenario: 'S1',
    title: 'S1 ingest, 1 record per request, 50 connections',
    compareAlerting: true,
    compareBatteries: true,
    loads: [{ name: 'ingest', connections: 50, ingest: true, workload: ingest(1) }],
  },
  {
    id: 'S1-r1000',
    scenario: 'S1',
    title: 'S1 ingest, 1 record per request, fixed 1,000 req/s (50 connections)',
    compareAlerting: true,
    compareBatteries: true,
    loads: [{ name: 'ingest', connections: 50, overallRate: 1000, ingest: true, workload: ingest(1) }],
  },
];

const S2: Variant[] = [
  {
    id: 'S2-c50',
    scenario: 'S2',
    title: 'S2 ingest, 50-record batches, 50 connections',
    compareAlerting: true,
    compareBatteries: true,
    loads: [{ name: 'ingest', connections: 50, ingest: true, workload: ingest(50) }],
  },
];

const S3: Variant[] = [
  ['24h', 24 * HOUR],
  ['7d', 7 * 24 * HOUR],
  ['30d', 30 * 24 * HOUR],
].flatMap(([label, rangeMs]) =>
  [4, 16].map((connections) => ({
    id: `S3-${label}-c${connections}`,
    scenario: 'S3' as const,
    title: `S3 history ${label}, bucket auto, random devices, ${connections} connections`,
    loads: [{ name: 'history', connections, workload: (fleet: Fleet) => historyWorkload(fleet, rangeMs as number) }],
  })),
);

/** Config and OTA polls with If-None-Match, half each, random devices: mostly 304s answered from memory. */
const S4: Variant[] = [
  {
    id: 'S4-c50',
    scenario: 'S4',
    title: 'S4 config and OTA polling with If-None-Match (mostly 304), 50 connections',
    countTransactions: true,
    loads: [{ name: 'poll', connections: 50, workload: (fleet) => pollWorkload(fleet) }],
  },
];

/** Logins at fixed, modest rates while S1's 50 connections keep the server saturated. */
const S5: Variant[] = [
  {
    id: 'S5-logins',
    scenario: 'S5',
    title: 'S5 device logins (20/s) and customer logins (2/s) while S1 runs at 50 connections',
    loads: [
      { name: 'ingest', connections: 50, ingest: true, workload: ingest(1) },
      { name: 'device login', connections: 2, overallRate: 20, workload: (fleet) => deviceLoginWorkload(fleet) },
      { name: 'customer login', connections: 1, overallRate: 2, workload: (fleet) => customerLoginWorkload(fleet) },
    ],
  },
];

/**
 * S1's load (1 record per request, 50 connections, as fast as answered) on the 200 streamed
 * devices only, so every record it stores goes to the 5 streams of its device's viewer: the most
 * fan-out 1,000 subscribers over 200 devices can take. Each viewer opens 3 streams of all its
 * devices (the overview) and 2 with ?deviceId= (a device page); it owns one device, so all five
 * carry the same events.
 */
const S6: Variant[] = [
  {
    id: 'S6-c50',
    scenario: 'S6',
    title: 'S6 live stream: S1 at 50 connections over the 200 streamed devices, with 1,000 subscribers and with none',
    streams: { perViewer: 5, narrowedPerViewer: 2, probeIntervalMs: 100 },
    loads: [
      {
        name: 'ingest',
        connections: 50,
        ingest: true,
        workload: (fleet) => {
          const live = liveFleetOf(fleet);
          return ingestWorkload(live, live.clock, 1);
        },
      },
    ],
  },
];

/** Battery energy over 30 days in daily buckets, random devices: the stored hours summed per day (target: p99 ≤ 20 ms). */
const S7: Variant[] = [
  {
    id: 'S7-energy-30d-c4',
    scenario: 'S7',
    title: 'S7 battery energy, 30 days in daily buckets, random devices, 4 connections',
    loads: [{ name: 'energy', connections: 4, workload: (fleet) => energyWorkload(fleet) }],
  },
];

/**
 * Command polls with If-None-Match on the fleet, as S4's config and OTA polls (same devices, same
 * connections): no command is sent, so all but the first answer per device are 304s, answered
 * from memory (target: no database query, and at least S4's poll rate in the same run).
 */
const S8: Variant[] = [
  {
    id: 'S8-c50',
    scenario: 'S8',
    title: 'S8 idle command polls with If-None-Match (304), 50 connections',
    countTransactions: true,
    loads: [{ name: 'command poll', connections: 50, workload: (fleet) => commandPollWorkload(fleet) }],
  },
];

/**
 * S1's load (1 record per request, 50 connections, as fast as answered) on the fleet, beside the
 * 1,000 gateways each holding GET /device/commands?waitSec=30 on the same service: first while they
 * only wait, against S1 alone in the same rounds (what the waiting requests cost: RSS, throughput);
 * then with a ping sent every 100 ms through the dashboard route to one of them (delivery). Apart,
 * because what the commands themselves cost (a send, a delivery and a result, each a transaction
 * with its event, the event's dispatch job, the audit) is not what 1,000 waiting requests cost.
 */
const S9: Variant[] = [
  {
    id: 'S9-wait-c50',
    scenario: 'S9',
    title: 'S9 long polls waiting: S1 at 50 connections beside 1,000 gateways holding long polls, and S1 alone',
    longPolls: { waitSec: 30, commandIntervalMs: null, compareWithout: true },
    loads: [{ name: 'ingest', connections: 50, ingest: true, workload: ingest(1) }],
  },
  {
    id: 'S9-commands-c50',
    scenario: 'S9',
    title: 'S9 command delivery: S1 at 50 connections beside 1,000 gateways holding long polls, a ping every 100 ms',
    longPolls: { waitSec: 30, commandIntervalMs: 100, compareWithout: false },
    loads: [{ name: 'ingest', connections: 50, ingest: true, workload: ingest(1) }],
  },
];

/** Log uploads of 50 lines from the 1,000 gateways, as fast as answered (target: ≥ 1,000 req/s). */
const S10: Variant[] = [
  {
    id: 'S10-c50',
    scenario: 'S10',
    title: 'S10 log upload, 50-line batches, 1,000 gateways, 50 connections',
    loads: [{ name: 'log upload', connections: 50, workload: (fleet) => logUploadWorkload(gatewayFleetOf(fleet), 50) }],
  },
];

/**
 * The first page (50) of the device list of an organization of 10,000 devices, as its member (an
 * operator), as fast as answered: the organization's list (organizationId, target: p99 ≤ 50 ms at
 * 4 connections), and the member's whole list for comparison. The service alone: the baseline has
 * no device list.
 */
const S11: Variant[] = [
  ...[4, 16].map((connections) => ({
    id: `S11-c${connections}`,
    scenario: 'S11' as const,
    title: `S11 organization device list (organizationId), first page of 10,000 devices, as a member, ${connections} connections`,
    serviceOnly: true,
    loads: [{ name: 'device list', connections, workload: (fleet: Fleet) => organizationListWorkload(organizationFleetOf(fleet), true) }],
  })),
  {
    id: 'S11-all-c4',
    scenario: 'S11' as const,
    title: "S11 a member's whole device list (no organizationId), first page, 4 connections",
    serviceOnly: true,
    loads: [{ name: 'device list', connections: 4, workload: (fleet: Fleet) => organizationListWorkload(organizationFleetOf(fleet), false) }],
  },
];

export const VARIANTS: Record<ScenarioId, Variant[]> = { S1, S2, S3, S4, S5, S6, S7, S8, S9, S10, S11 };
