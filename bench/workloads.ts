import type autocannon from 'autocannon';
import type pg from 'pg';
import { BATTERY_ID, CUSTOMER_PASSWORD, customerAccessToken, deviceAccessToken, type CustomerFixture, type DeviceFixture, ORGANIZATION_ID } from './fixtures.js';

/** What a workload learned from the responses, beyond autocannon's own counters. */
export interface Integrity {
  /** Records the service said it stored (sum of `accepted` over 2xx responses). */
  acknowledged: number;
  /** Records of this run found in the database afterwards. */
  stored: number;
  /** Of the requests still in flight when the run stopped (autocannon drops them), records that were committed anyway. */
  committedUnanswered: number;
  duplicates: number;
  rejected: number;
  /** stored = acknowledged + committedUnanswered, and no duplicates or rejections. */
  ok: boolean;
}

export interface Workload {
  request: autocannon.Request;
  /** Called once the run is over: checks what the database holds against what was acknowledged. */
  settle?(pool: pg.Pool): Promise<Integrity>;
  /** 2xx responses whose body was not what the scenario expects (e.g. an empty history). */
  unexpectedBodies(): number;
  /** 304 answers the scenario asked for with If-None-Match: expected, not counted as failures. */
  notModified?(): number;
  /** Ingest: the records sent so far, and how many of them breach the fleet's default alert rules. */
  sent?(): SentRecords;
}

/**
 * Records an ingest workload sent, against the thresholds of the service's fleet default alert
 * rules (src/modules/alerts/domain/alert-rule.ts: soc below 20, temperature above 55 or below −10).
 */
export interface SentRecords {
  records: number;
  socBelow20: number;
  temperatureOutside: number;
}

/** The thresholds of the fleet default alert rules, as this workload's values are judged against them. */
export const DEFAULT_RULE_THRESHOLDS = { socBelow: 20, temperatureAbove: 55, temperatureBelow: -10 } as const;

export interface Fleet {
  devices: DeviceFixture[];
  customers: CustomerFixture[];
  deviceTokens: string[];
  customerTokens: string[];
  /** End of the seeded history. */
  t0: number;
  /** S6: its streamed devices and their viewers (bench/fixtures.ts, liveDevicesOf), with an ingest clock of their own. */
  live?: LiveFleet;
  /** S9 and S10: the 1,000 gateways and their operators (bench/fixtures.ts, gatewaysOf), with a clock of their own for S10's log lines. */
  gateways?: LiveFleet;
  /** S11: the organization's member (bench/fixtures.ts, organizationMembersOf); no devices, as none of the organization's sends anything. */
  organization?: Fleet;
}

export interface LiveFleet extends Fleet {
  clock: IngestClock;
}

/** The streamed devices of S6 (set in run.ts). */
export function liveFleetOf(fleet: Fleet): LiveFleet {
  if (!fleet.live) throw new Error('S6 needs the streamed devices (fleet.live)');
  return fleet.live;
}

/** The gateways of S9 and S10 (set in run.ts). */
export function gatewayFleetOf(fleet: Fleet): LiveFleet {
  if (!fleet.gateways) throw new Error('S9 and S10 need the gateways (fleet.gateways)');
  return fleet.gateways;
}

/** The organization of S11 (set in run.ts). */
export function organizationFleetOf(fleet: Fleet): Fleet {
  if (!fleet.organization) throw new Error('S11 needs the organization (fleet.organization)');
  return fleet.organization;
}

export function fleetOf(devices: DeviceFixture[], customers: CustomerFixture[], t0: Date): Fleet {
  return {
    devices,
    customers,
    deviceTokens: devices.map(deviceAccessToken),
    customerTokens: customers.map(customerAccessToken),
    t0: t0.getTime(),
  };
}

const pick = (count: number) => Math.floor(Math.random() * count);
const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * Timestamps for ingest: each device's records follow the wall clock, 1 ms apart at least, and
 * never repeat across the whole run (baseline and service runs included), so no request is a
 * duplicate and every run owns a time window of its own.
 */
export class IngestClock {
  private readonly last: Float64Array;
  private floor = 0;
  private highest = 0;

  constructor(devices: number) {
    this.last = new Float64Array(devices);
  }

  /** Starts a run: everything it sends lies at or after the returned instant. */
  startWindow(): number {
    this.floor = Math.max(Date.now(), this.highest + 1);
    return this.floor;
  }

  next(device: number, records: number): number {
    const base = Math.max(Date.now(), this.last[device] + 1, this.floor);
    this.last[device] = base + records - 1;
    this.highest = Math.max(this.highest, this.last[device]);
    return base;
  }

  get latest(): number {
    return this.highest;
  }
}

interface Pending {
  device: number;
  base: number;
  records: number;
}

interface IngestResponse {
  accepted: number;
  duplicates: number;
  rejected: unknown[];
}

/**
 * POST /api/v1/telemetry for a random device, `recordsPerRequest` records with the four seeded
 * metrics. `devices` (indexes into the fleet, default all) keeps concurrent ingest workloads apart,
 * so each one's integrity check counts its own records only.
 */
export function ingestWorkload(fleet: Fleet, clock: IngestClock, recordsPerRequest: number, devices: number[] = fleet.devices.map((device) => device.index)): Workload {
  const from = clock.startWindow();
  const inFlight = new Set<Pending>();
  let acknowledged = 0;
  let duplicates = 0;
  let rejected = 0;
  let unexpected = 0;
  const sent: SentRecords = { records: 0, socBelow20: 0, temperatureOutside: 0 };

  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/telemetry',
    setupRequest: (req, context) => {
      const device = devices[pick(devices.length)];
      const base = clock.next(device, recordsPerRequest);
      const records = [];
      for (let k = 0; k < recordsPerRequest; k++) {
        // soc uniform over 0–100 (about a fifth below the soc-low rule's 20), temperature 18–28 (inside both temperature rules).
        const soc = round(Math.random() * 100, 1);
        const temperature = round(18 + Math.random() * 10, 2);
        sent.records += 1;
        if (soc < DEFAULT_RULE_THRESHOLDS.socBelow) sent.socBelow20 += 1;
        if (temperature > DEFAULT_RULE_THRESHOLDS.temperatureAbove || temperature < DEFAULT_RULE_THRESHOLDS.temperatureBelow) sent.temperatureOutside += 1;
        records.push({
          ts: new Date(base + k).toISOString(),
          batteryId: BATTERY_ID,
          metrics: { voltage: round(50 + Math.random() * 4, 3), current: round(Math.random() * 24 - 12, 2), soc, temperature },
        });
      }
      const pending: Pending = { device, base, records: recordsPerRequest };
      (context as { pending?: Pending }).pending = pending;
      inFlight.add(pending);
      return { ...req, headers: { 'content-type': 'application/json', authorization: `Bearer ${fleet.deviceTokens[device]}` }, body: JSON.stringify({ records }) };
    },
    onResponse: (status, body, context) => {
      const pending = (context as { pending?: Pending }).pending;
      if (pending) inFlight.delete(pending);
      if (status < 200 || status >= 300) return;
      try {
        const parsed = JSON.parse(body) as IngestResponse;
        acknowledged += parsed.accepted;
        duplicates += parsed.duplicates;
        rejected += parsed.rejected.length;
      } catch {
        unexpected += 1;
      }
    },
  };

  return {
    request,
    unexpectedBodies: () => unexpected,
    sent: () => ({ ...sent }),
    async settle(pool) {
      const ids = devices.map((device) => fleet.devices[device].deviceId);
      const countStored = async () =>
        (
          // Its own battery only: S6's probes (bench/stream-client.ts) write to the same devices under another.
          await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = ANY($1::text[]) AND battery_id = $4 AND ts >= $2 AND ts <= $3', [
            ids,
            new Date(from),
            new Date(clock.latest),
            BATTERY_ID,
          ])
        ).rows[0].n;
      // Requests cut off at the end may still be committing: wait until the count stops moving.
      let stored = await countStored();
      for (let waited = 0; waited < 10_000; waited += 300) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        const again = await countStored();
        if (again === stored) break;
        stored = again;
      }
      const keys = [...inFlight].flatMap((pending) => Array.from({ length: pending.records }, (_, k) => [fleet.devices[pending.device].deviceId, new Date(pending.base + k)] as const));
      const committedUnanswered =
        keys.length === 0
          ? 0
          : (
              await pool.query<{ n: number }>(
                `SELECT count(*)::int AS n FROM telemetry t JOIN unnest($1::text[], $2::timestamptz[]) AS k (device_id, ts)
                   ON t.device_id = k.device_id AND t.ts = k.ts AND t.battery_id = $3`,
                [keys.map((key) => key[0]), keys.map((key) => key[1]), BATTERY_ID],
              )
            ).rows[0].n;
      return { acknowledged, stored, committedUnanswered, duplicates, rejected, ok: stored === acknowledged + committedUnanswered && duplicates === 0 && rejected === 0 };
    },
  };
}

/** GET …/telemetry/history for a random device, as its owner: [to − range, to) with `to` in the last hour of the seeded history, bucket auto. */
export function historyWorkload(fleet: Fleet, rangeMs: number): Workload {
  let unexpected = 0;
  const request: autocannon.Request = {
    method: 'GET',
    setupRequest: (req) => {
      const device = fleet.devices[pick(fleet.devices.length)];
      // Unaligned ends, as "the last 24 hours" from a dashboard: the raw edges are read too.
      const to = fleet.t0 - pick(3_600_000);
      const from = to - rangeMs;
      return {
        ...req,
        path: `/api/v1/dashboard/devices/${device.deviceId}/telemetry/history?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&bucket=auto`,
        headers: { authorization: `Bearer ${fleet.customerTokens[device.ownerIndex]}` },
      };
    },
    onResponse: (status, body) => {
      if (status >= 200 && status < 300 && !body.includes('"points":[{')) unexpected += 1;
    },
  };
  return { request, unexpectedBodies: () => unexpected };
}

/**
 * S11: GET /api/v1/dashboard/devices?organizationId=…&limit=50 as the organization's member: the
 * first page of its 10,000 devices (the organization switcher's list); with `scoped` false, the
 * member's whole list (every device they see, the organization's among them). A 2xx answer must
 * hold 50 of them and a next cursor.
 */
export function organizationListWorkload(organization: Fleet, scoped: boolean, limit = 50): Workload {
  let unexpected = 0;
  const request: autocannon.Request = {
    method: 'GET',
    path: `/api/v1/dashboard/devices?${scoped ? `organizationId=${ORGANIZATION_ID}&` : ''}limit=${limit}`,
    headers: { authorization: `Bearer ${organization.customerTokens[0]}` },
    onResponse: (status, body) => {
      if (status < 200 || status >= 300) return;
      const listed = body.match(/"deviceId":"bench-org-\d{5}"/g)?.length ?? 0;
      if (listed !== limit || !body.includes('"nextCursor":"')) unexpected += 1;
    },
  };
  return { request, unexpectedBodies: () => unexpected };
}

/** POST /api/v1/device/login with a random device's id and secret. */
export function deviceLoginWorkload(fleet: Fleet): Workload {
  let unexpected = 0;
  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/device/login',
    setupRequest: (req) => {
      const device = fleet.devices[pick(fleet.devices.length)];
      return { ...req, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ deviceId: device.deviceId, deviceSecret: device.secret }) };
    },
    onResponse: (status, body) => {
      if (status >= 200 && status < 300 && !body.includes('"accessToken"')) unexpected += 1;
    },
  };
  return { request, unexpectedBodies: () => unexpected };
}

/** POST /api/v1/auth/login with a random customer's e-mail and password (argon2id verify). */
export function customerLoginWorkload(fleet: Fleet): Workload {
  let unexpected = 0;
  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/auth/login',
    setupRequest: (req) => {
      const customer = fleet.customers[pick(fleet.customers.length)];
      return { ...req, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: customer.email, password: CUSTOMER_PASSWORD }) };
    },
    onResponse: (status, body) => {
      if (status >= 200 && status < 300 && !body.includes('"accessToken"')) unexpected += 1;
    },
  };
  return { request, unexpectedBodies: () => unexpected };
}

/**
 * S4: gateways polling GET /device/config and GET /ota/latest, each with the ETag of its last
 * answer in If-None-Match, as firmware does: after the first answer per device and route, 304s.
 */
export function pollWorkload(fleet: Fleet): Workload {
  const etags = new Map<string, string>();
  let unexpected = 0;
  let notModified = 0;
  const request: autocannon.Request = {
    method: 'GET',
    setupRequest: (req, context) => {
      const device = pick(fleet.devices.length);
      const path = Math.random() < 0.5 ? '/api/v1/device/config' : '/api/v1/ota/latest';
      const key = `${path}|${device}`;
      (context as { key?: string }).key = key;
      const etag = etags.get(key);
      return { ...req, path, headers: { authorization: `Bearer ${fleet.deviceTokens[device]}`, ...(etag ? { 'if-none-match': etag } : {}) } };
    },
    onResponse: (status, body, context, headers) => {
      const key = (context as { key?: string }).key;
      if (status === 304) {
        notModified += 1;
        return;
      }
      const etag = (headers as Record<string, string | undefined> | undefined)?.etag;
      if (status === 200 && key && etag && body.length > 0) etags.set(key, etag);
      else if (status >= 200 && status < 300) unexpected += 1;
    },
  };
  return { request, unexpectedBodies: () => unexpected, notModified: () => notModified };
}

/**
 * S7: GET a random device's battery energy over 30 days in daily buckets (the dashboard's default),
 * the days up to the seeded history's last midnight. Not the day S1 and S2 ingest into: their
 * records are 1 ms apart, hundreds of thousands per device and hour, and the first read of each
 * device would recompute those hours (bench/README.md, S7).
 */
export function energyWorkload(fleet: Fleet): Workload {
  const DAY_MS = 86_400_000;
  // 15 minutes back: a record at t0 marks the hour a quarter of an hour before it too.
  const to = Math.floor((fleet.t0 - 15 * 60_000) / DAY_MS) * DAY_MS;
  const from = to - 30 * DAY_MS;
  let unexpected = 0;
  const request: autocannon.Request = {
    method: 'GET',
    setupRequest: (req) => {
      const device = fleet.devices[pick(fleet.devices.length)];
      return {
        ...req,
        path: `/api/v1/dashboard/devices/${device.deviceId}/batteries/${BATTERY_ID}/energy?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&bucket=1d`,
        headers: { authorization: `Bearer ${fleet.customerTokens[device.ownerIndex]}` },
      };
    },
    // The seeded history charges and discharges all day: every answer must carry energy, not only empty buckets.
    onResponse: (status, body) => {
      if (status >= 200 && status < 300 && !/"dischargedAh":[1-9]/.test(body)) unexpected += 1;
    },
  };
  return { request, unexpectedBodies: () => unexpected };
}

/**
 * S8: gateways polling GET /device/commands with the ETag of their last answer in If-None-Match,
 * as firmware does between commands: no command is sent to the fleet, so after the first answer
 * per device (an empty list) every poll is a 304.
 */
export function commandPollWorkload(fleet: Fleet): Workload {
  const etags = new Map<number, string>();
  let unexpected = 0;
  let notModified = 0;
  const request: autocannon.Request = {
    method: 'GET',
    path: '/api/v1/device/commands',
    setupRequest: (req, context) => {
      const device = pick(fleet.devices.length);
      (context as { device?: number }).device = device;
      const etag = etags.get(device);
      return { ...req, headers: { authorization: `Bearer ${fleet.deviceTokens[device]}`, ...(etag ? { 'if-none-match': etag } : {}) } };
    },
    onResponse: (status, body, context, headers) => {
      if (status === 304) {
        notModified += 1;
        return;
      }
      const device = (context as { device?: number }).device;
      const etag = (headers as Record<string, string | undefined> | undefined)?.etag;
      if (status === 200 && device !== undefined && etag && body.includes('"commands":[]')) etags.set(device, etag);
      else if (status >= 200 && status < 300) unexpected += 1;
    },
  };
  return { request, unexpectedBodies: () => unexpected, notModified: () => notModified };
}

const LOG_TAGS = ['wifi', 'mqtt', 'bms', 'ota', 'app', 'http'] as const;

/** What a gateway logs, more or less: ESP-IDF-style lines of 40–70 bytes, mostly info. */
function logLine(sequence: number): { level: string; tag: string; message: string } {
  const roll = Math.random();
  const level = roll < 0.8 ? 'info' : roll < 0.9 ? 'debug' : roll < 0.97 ? 'warn' : 'error';
  const tag = LOG_TAGS[pick(LOG_TAGS.length)];
  const message =
    tag === 'wifi'
      ? `sta connected, rssi ${-40 - pick(50)} dBm, channel ${1 + pick(11)}, reconnects ${pick(5)}`
      : tag === 'bms'
        ? `cell voltages min ${(3.2 + Math.random() * 0.1).toFixed(3)} V max ${(3.3 + Math.random() * 0.1).toFixed(3)} V, balancing ${pick(2) === 1 ? 'on' : 'off'}`
        : tag === 'mqtt'
          ? `publish ok, msg_id=${sequence}, ${pick(400)} bytes in ${pick(90)} ms`
          : `free heap ${100_000 + pick(60_000)} bytes, min ${80_000 + pick(20_000)}, uptime ${pick(864_000)} s, seq ${sequence}`;
  return { level, tag, message };
}

/**
 * Lines without their time, as JSON members, made once: a request picks 50 of them at random and
 * puts its own times in front, so the load generator spends its CPU on sending, not on making text
 * (a line is its device, its time and its text: with times never repeated, no line is a duplicate).
 */
const LOG_LINE_TAILS = Array.from({ length: 4096 }, (_, index) => JSON.stringify(logLine(index)).slice(1));

interface PendingLines {
  device: number;
  base: number;
  lines: number;
}

/**
 * S10: POST /api/v1/device/logs, `linesPerRequest` lines from a random one of the 1,000 gateways,
 * its lines 1 ms apart on its own clock (never repeated across the run, so none is a duplicate).
 * settle() checks that the lines stored in the run's window are those acknowledged.
 */
export function logUploadWorkload(gateways: LiveFleet, linesPerRequest: number): Workload {
  const clock = gateways.clock;
  const from = clock.startWindow();
  const inFlight = new Set<PendingLines>();
  let acknowledged = 0;
  let duplicates = 0;
  let rejected = 0;
  let unexpected = 0;

  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/device/logs',
    setupRequest: (req, context) => {
      const device = pick(gateways.devices.length);
      const base = clock.next(device, linesPerRequest);
      let body = '{"lines":[';
      for (let k = 0; k < linesPerRequest; k++) body += `${k === 0 ? '' : ','}{"ts":"${new Date(base + k).toISOString()}",${LOG_LINE_TAILS[pick(LOG_LINE_TAILS.length)]}`;
      body += ']}';
      const pending: PendingLines = { device, base, lines: linesPerRequest };
      (context as { pending?: PendingLines }).pending = pending;
      inFlight.add(pending);
      return { ...req, headers: { 'content-type': 'application/json', authorization: `Bearer ${gateways.deviceTokens[device]}` }, body };
    },
    onResponse: (status, body, context) => {
      const pending = (context as { pending?: PendingLines }).pending;
      if (pending) inFlight.delete(pending);
      if (status < 200 || status >= 300) return;
      try {
        const parsed = JSON.parse(body) as IngestResponse;
        acknowledged += parsed.accepted;
        duplicates += parsed.duplicates;
        rejected += parsed.rejected.length;
      } catch {
        unexpected += 1;
      }
    },
  };

  return {
    request,
    unexpectedBodies: () => unexpected,
    async settle(pool) {
      const ids = gateways.devices.map((device) => device.deviceId);
      const countStored = async () =>
        (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM device_logs WHERE device_id = ANY($1::text[]) AND ts >= $2 AND ts <= $3', [ids, new Date(from), new Date(clock.latest)])).rows[0].n;
      // Requests cut off at the end may still be committing: wait until the count stops moving.
      let stored = await countStored();
      for (let waited = 0; waited < 10_000; waited += 300) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        const again = await countStored();
        if (again === stored) break;
        stored = again;
      }
      const keys = [...inFlight].flatMap((pending) => Array.from({ length: pending.lines }, (_, k) => [gateways.devices[pending.device].deviceId, new Date(pending.base + k)] as const));
      const committedUnanswered =
        keys.length === 0
          ? 0
          : (
              await pool.query<{ n: number }>(
                'SELECT count(*)::int AS n FROM device_logs l JOIN unnest($1::text[], $2::timestamptz[]) AS k (device_id, ts) ON l.device_id = k.device_id AND l.ts = k.ts',
                [keys.map((key) => key[0]), keys.map((key) => key[1])],
              )
            ).rows[0].n;
      return { acknowledged, stored, committedUnanswered, duplicates, rejected, ok: stored === acknowledged + committedUnanswered && duplicates === 0 && rejected === 0 };
    },
  };
}
