import type { components, paths } from '@device-cloud/client';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { HOUR, ingest, iso, type IngestResult, type TelemetryRecordBody } from '../support/telemetry.js';

type Headers = { authorization: string };
type Alert = components['schemas']['AlertResponse'];
type AlertRule = components['schemas']['AlertRuleDto'];
type RulesBody = components['schemas']['AlertRulesRequest'];
type EventItem = components['schemas']['DeviceEventResponse'];
type AlertsQuery = NonNullable<paths['/api/v1/dashboard/alerts']['get']['parameters']['query']>;

/** A gateway as the tests drive it. */
interface Gateway {
  deviceId: string;
  claimCode: string;
  accessToken: string;
}

/** What an alert event says, without its id. */
interface Said {
  type: EventItem['type'];
  deviceId: string;
  occurredAt: string;
  data: Record<string, unknown>;
}

const S = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Gateway timestamps of every device start here: in the past, well inside retention. */
const base = Date.now() - 2 * HOUR;

const SHIPPED_DEFAULTS: AlertRule[] = [
  { ruleId: 'soc-low', metric: 'soc', op: 'below', threshold: 20, clearAt: 25, forSec: 600, enabled: true },
  { ruleId: 'temperature-high', metric: 'temperature', op: 'above', threshold: 55, clearAt: 50, forSec: 60, enabled: true },
  { ruleId: 'temperature-low', metric: 'temperature', op: 'below', threshold: -10, clearAt: -5, forSec: 60, enabled: true },
  { ruleId: 'crash-loop', metric: 'crashes', op: 'above', threshold: 2, clearAt: 0, forSec: 0, windowSec: 600, enabled: true },
];
const [SOC_LOW, TEMPERATURE_HIGH, TEMPERATURE_LOW] = SHIPPED_DEFAULTS;

const aRule = (overrides: Partial<AlertRule> = {}): AlertRule => ({ ruleId: 'soc-now', metric: 'soc', op: 'below', threshold: 20, clearAt: 25, forSec: 0, enabled: true, ...overrides });

function record(atMs: number, metrics: Record<string, number>, batteryId?: string): TelemetryRecordBody {
  return { ts: iso(atMs), ...(batteryId === undefined ? {} : { batteryId }), metrics };
}

async function aGateway(t: TestApp, owner: SignedIn): Promise<Gateway> {
  const { body, registered } = await aClaimedDevice(t, owner);
  return { deviceId: body.deviceId, claimCode: body.claimCode!, accessToken: registered.accessToken };
}

/** Posts the records as the gateway; the answer must count them as given (all new unless said). */
async function sent(t: TestApp, gateway: Gateway, records: TelemetryRecordBody[], counts: Omit<IngestResult, 'rejected'> = { accepted: records.length, duplicates: 0 }): Promise<void> {
  const { data, response } = await ingest(t.api, gateway.accessToken, records);
  expect({ status: response.status, body: data }).toEqual({ status: 200, body: { ...counts, rejected: [] } });
}

function rulesOf(t: TestApp, who: Headers | undefined, deviceId: string) {
  return t.api.GET('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId } }, headers: who });
}

function putRules(t: TestApp, who: Headers | undefined, deviceId: string, body: RulesBody) {
  return t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId } }, body, headers: who });
}

function deleteRules(t: TestApp, who: Headers | undefined, deviceId: string) {
  return t.api.DELETE('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId } }, headers: who });
}

async function ownRules(t: TestApp, who: SignedIn, gateway: Gateway, rules: AlertRule[]): Promise<void> {
  const { data, response } = await putRules(t, who.headers, gateway.deviceId, { rules });
  expect({ status: response.status, body: data }).toEqual({ status: 200, body: { rules, inherited: false } });
}

function listAlerts(t: TestApp, who: Headers | undefined, query: AlertsQuery = {}) {
  return t.api.GET('/api/v1/dashboard/alerts', { params: { query }, headers: who });
}

/** One page that must be the whole answer. */
async function alertsSeenBy(t: TestApp, who: SignedIn, query: AlertsQuery = {}): Promise<Alert[]> {
  const { data, response } = await listAlerts(t, who.headers, { limit: 200, ...query });
  expect(response.status).toBe(200);
  expect(data!.nextCursor).toBeNull();
  return data!.items;
}

function acknowledge(t: TestApp, who: Headers | undefined, alertId: string) {
  return t.api.POST('/api/v1/dashboard/alerts/{alertId}/acknowledge', { params: { path: { alertId } }, headers: who });
}

/** The device's alert events as `who` sees them, oldest first. */
async function alertEvents(t: TestApp, who: SignedIn, deviceId: string): Promise<Said[]> {
  const { data, response } = await t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId, type: 'alert.opened,alert.resolved', limit: 200 } }, headers: who.headers });
  expect(response.status).toBe(200);
  expect(data!.nextCursor).toBeNull();
  return data!.items.map(({ type, deviceId: id, occurredAt, data: said }) => ({ type, deviceId: id, occurredAt, data: said })).reverse();
}

/** The alert the API must show for an opening by `rule` at (atMs, value): open, on battery main unless said. */
function anAlert(deviceId: string, rule: AlertRule, atMs: number, value: number, overrides: Partial<Alert> = {}): Alert {
  return {
    alertId: expect.stringMatching(UUID),
    deviceId,
    batteryId: 'main',
    ruleId: rule.ruleId,
    metric: rule.metric,
    op: rule.op,
    threshold: rule.threshold,
    clearAt: rule.clearAt,
    value,
    state: 'open',
    openedAt: iso(atMs),
    acknowledgedAt: null,
    resolvedAt: null,
    resolvedValue: null,
    ...overrides,
  };
}

const resolvedAt = (atMs: number, value: number): Partial<Alert> => ({ state: 'resolved', resolvedAt: iso(atMs), resolvedValue: value });

function openedEvent(alert: Alert): Said {
  const { alertId, deviceId, batteryId, ruleId, metric, op, threshold, clearAt, value } = alert;
  return { type: 'alert.opened', deviceId, occurredAt: alert.openedAt, data: { alertId, batteryId, ruleId, metric, op, threshold, clearAt, value } };
}

function resolvedEvent(alert: Alert, reason: 'cleared' | 'rule_removed' = 'cleared'): Said {
  const { alertId, deviceId, batteryId, ruleId, metric } = alert;
  return { type: 'alert.resolved', deviceId, occurredAt: alert.resolvedAt!, data: { alertId, batteryId, ruleId, metric, value: alert.resolvedValue, reason } };
}

/** An instant the service chose, between two readings of the test's clock (the service shares it). */
function expectWithin(instant: string | null, from: number, to: number): void {
  expect(Date.parse(instant ?? '')).toBeGreaterThanOrEqual(from - 5);
  expect(Date.parse(instant ?? '')).toBeLessThanOrEqual(to + 5);
}

/**
 * A barrier for asserting that something did not happen. The monitor evaluates the flushes one
 * after another in the order they were stored (AlertMonitor's queue), and a flush is handed to it
 * before its ingest request is answered. So once a transition caused by a record sent after those
 * answers shows up (here a marker device whose rule flips on every record), every record ingested
 * before it has been evaluated: what has not happened by then never will. Polling for an absence,
 * or sleeping, would prove nothing.
 */
async function aBarrier(t: TestApp): Promise<() => Promise<void>> {
  const owner = await aCustomer(t);
  const marker = await aGateway(t, owner);
  await ownRules(t, owner, marker, [{ ruleId: 'marker', metric: 'marker', op: 'above', threshold: 0, clearAt: 0, forSec: 0, enabled: true }]);
  let transitions = 0;
  return async () => {
    transitions += 1;
    await sent(t, marker, [record(base + transitions * S, { marker: transitions % 2 })]);
    await eventually(async () => expect(await alertEvents(t, owner, marker.deviceId)).toHaveLength(transitions));
  };
}

describe('alerts', () => {
  let t: TestApp;
  let admin: SignedIn;
  /** Every test drives devices of its own; these two customers are shared to keep the suite quick. */
  let owner: SignedIn;
  let stranger: SignedIn;
  let settled: () => Promise<void>;

  beforeAll(async () => {
    t = await createTestApp(ADMIN_SETTINGS);
    [admin, owner, stranger] = await Promise.all([anAdmin(t), aCustomer(t), aCustomer(t)]);
    settled = await aBarrier(t);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('the shipped defaults', () => {
    it('a new device follows them: soc below 20 for 600 s opens once at the record that completes the 600 s, resolves once at 25 or more, not inside the band', async () => {
      const gateway = await aGateway(t, owner);
      const { data, response } = await rulesOf(t, owner.headers, gateway.deviceId);
      expect({ status: response.status, body: data }).toEqual({ status: 200, body: { rules: SHIPPED_DEFAULTS, inherited: true } });

      await sent(t, gateway, [record(base, { soc: 15, voltage: 48.1 })]);
      await sent(t, gateway, [record(base + 300 * S, { soc: 15, voltage: 48 })]);
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([]);
      // The run is being timed from the first breaching record (the API has no view of it).
      const { rows: series } = await t.db.query<{ battery_id: string; rule_id: string; breaching_since: Date; open_alert_id: string | null }>(
        'SELECT battery_id, rule_id, breaching_since, open_alert_id FROM alert_series WHERE device_id = $1',
        [gateway.deviceId],
      );
      expect(series).toEqual([{ battery_id: 'main', rule_id: 'soc-low', breaching_since: new Date(base), open_alert_id: null }]);

      await sent(t, gateway, [record(base + 600 * S, { soc: 14.5, voltage: 47.9 })]);
      const opened = anAlert(gateway.deviceId, SOC_LOW, base + 600 * S, 14.5);
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([opened]));

      await sent(t, gateway, [record(base + 660 * S, { soc: 22 }), record(base + 690 * S, { soc: 24.9 })]);
      await settled();
      const [stillOpen] = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
      expect(stillOpen).toEqual(opened);

      await sent(t, gateway, [record(base + 720 * S, { soc: 26 })]);
      const resolved = { ...opened, alertId: stillOpen.alertId, ...resolvedAt(base + 720 * S, 26) };
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([resolved]));

      await sent(t, gateway, [record(base + 780 * S, { soc: 30 }), record(base + 840 * S, { soc: 21 })]);
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([resolved]);
      expect(await alertEvents(t, owner, gateway.deviceId)).toEqual([openedEvent(resolved), resolvedEvent(resolved)]);
    });
  });

  describe('per-device rules', () => {
    it('replace the defaults for that device only: forSec 0 opens on the first breaching record, another device still follows the defaults', async () => {
      const [own, other] = await Promise.all([aGateway(t, owner), aGateway(t, owner)]);
      const socNow = aRule({ threshold: 30, clearAt: 35 });
      await ownRules(t, owner, own, [socNow]);
      expect((await rulesOf(t, owner.headers, own.deviceId)).data).toEqual({ rules: [socNow], inherited: false });
      expect((await rulesOf(t, owner.headers, other.deviceId)).data).toEqual({ rules: SHIPPED_DEFAULTS, inherited: true });

      // 11 minutes of a flat, hot battery: soc 18 breaches both soc rules, temperature 60 the default high one.
      const records = Array.from({ length: 11 }, (_, i) => record(base + i * 60 * S, { soc: 18, temperature: 60 }));
      await sent(t, own, records);
      await sent(t, other, records);

      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: own.deviceId })).toEqual([anAlert(own.deviceId, socNow, base, 18)]));
      await eventually(async () =>
        expect(await alertsSeenBy(t, owner, { deviceId: other.deviceId })).toEqual([anAlert(other.deviceId, SOC_LOW, base + 600 * S, 18), anAlert(other.deviceId, TEMPERATURE_HIGH, base + 60 * S, 60)]),
      );
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: own.deviceId })).toEqual([anAlert(own.deviceId, socNow, base, 18)]);
    });

    it('DELETE goes back to the defaults (inherited again) and resolves the alerts of rules that are gone, reason rule_removed, without a value', async () => {
      const gateway = await aGateway(t, owner);
      const socNow = aRule();
      await ownRules(t, owner, gateway, [socNow]);
      await sent(t, gateway, [record(base, { soc: 12 })]);
      const [opened] = await eventually(async () => {
        const alerts = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
        expect(alerts).toEqual([anAlert(gateway.deviceId, socNow, base, 12)]);
        return alerts;
      });

      const before = Date.now();
      const { data, response } = await deleteRules(t, owner.headers, gateway.deviceId);
      const after = Date.now();
      expect({ status: response.status, body: data }).toEqual({ status: 200, body: { rules: SHIPPED_DEFAULTS, inherited: true } });
      expect((await rulesOf(t, owner.headers, gateway.deviceId)).data).toEqual({ rules: SHIPPED_DEFAULTS, inherited: true });

      const [resolved] = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
      expect(resolved).toEqual({ ...opened, state: 'resolved', resolvedAt: expect.any(String), resolvedValue: null });
      expectWithin(resolved.resolvedAt, before, after);
      expect(await alertEvents(t, owner, gateway.deviceId)).toEqual([openedEvent(resolved), resolvedEvent(resolved, 'rule_removed')]);

      // The defaults apply from the next record: soc 12 again only starts the 600 s of soc-low.
      await sent(t, gateway, [record(base + 60 * S, { soc: 12 })]);
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([resolved]);
      await sent(t, gateway, [record(base + 660 * S, { soc: 11 })]);
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([anAlert(gateway.deviceId, SOC_LOW, base + 660 * S, 11), resolved]));
    });

    it('disabling a rule resolves its open alert (rule_removed); editing a rule keeps its series: the open alert resolves by the new clearAt', async () => {
      const gateway = await aGateway(t, owner);
      const low = aRule({ ruleId: 'low' });
      const hot = aRule({ ruleId: 'hot', metric: 'temperature', op: 'above', threshold: 40, clearAt: 35 });
      await ownRules(t, owner, gateway, [low, hot]);
      await sent(t, gateway, [record(base, { soc: 10, temperature: 45 })]);
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'open' })).toHaveLength(2));

      const before = Date.now();
      await ownRules(t, owner, gateway, [{ ...low, clearAt: 40 }, { ...hot, enabled: false }]);
      const after = Date.now();
      const alerts = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
      const lowAlert = alerts.find((alert) => alert.ruleId === 'low')!;
      const hotAlert = alerts.find((alert) => alert.ruleId === 'hot')!;
      expect(lowAlert).toEqual(anAlert(gateway.deviceId, low, base, 10));
      expect(hotAlert).toEqual(anAlert(gateway.deviceId, hot, base, 45, { state: 'resolved', resolvedAt: expect.any(String), resolvedValue: null }));
      expectWithin(hotAlert.resolvedAt, before, after);

      // 30 would have cleared by the old clearAt (25), not by the new one (40); a hot record no longer counts.
      await sent(t, gateway, [record(base + 60 * S, { soc: 30, temperature: 60 })]);
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'open' })).toEqual([lowAlert]);
      await sent(t, gateway, [record(base + 120 * S, { soc: 40, temperature: 60 })]);
      const lowResolved = { ...lowAlert, ...resolvedAt(base + 120 * S, 40) };
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'resolved' })).toEqual(expect.arrayContaining([lowResolved, hotAlert])));
      await settled();
      const final = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
      expect(final).toHaveLength(2);
      expect(final).toEqual(expect.arrayContaining([lowResolved, hotAlert]));
      const events = await alertEvents(t, owner, gateway.deviceId);
      // The two openings come from one record: their order between them is not part of the contract.
      expect(events).toHaveLength(4);
      expect(events.slice(0, 2)).toEqual(expect.arrayContaining([openedEvent(lowAlert), openedEvent(hotAlert)]));
      expect(events.slice(2)).toEqual([resolvedEvent(hotAlert, 'rule_removed'), resolvedEvent(lowResolved)]);
    });

    it('refuses invalid rule sets with 400 and changes nothing: INVALID_ALERT_RULE for the hysteresis on the wrong side or a repeated ruleId, VALIDATION_FAILED for wrong types', async () => {
      const [gateway, fresh] = await Promise.all([aGateway(t, owner), aGateway(t, owner)]);
      const kept = [aRule({ ruleId: 'kept' })];
      await ownRules(t, owner, gateway, kept);

      const invalid: Array<[string, unknown[], string, string]> = [
        ['clearAt below the threshold of a below rule', [aRule({ threshold: 20, clearAt: 15 })], 'INVALID_ALERT_RULE', 'rules[0].clearAt'],
        ['clearAt above the threshold of an above rule', [aRule({ op: 'above', threshold: 50, clearAt: 55 })], 'INVALID_ALERT_RULE', 'rules[0].clearAt'],
        ['a repeated ruleId', [aRule({ ruleId: 'twice' }), aRule({ ruleId: 'twice', metric: 'voltage' })], 'INVALID_ALERT_RULE', 'rules[1].ruleId'],
        ['a threshold as a string', [{ ...aRule(), threshold: '20' }], 'VALIDATION_FAILED', 'rules.0.threshold'],
        ['a fractional forSec', [{ ...aRule(), forSec: 1.5 }], 'VALIDATION_FAILED', 'rules.0.forSec'],
        ['a negative forSec', [{ ...aRule(), forSec: -1 }], 'VALIDATION_FAILED', 'rules.0.forSec'],
        ['an unknown op', [{ ...aRule(), op: 'equals' }], 'VALIDATION_FAILED', 'rules.0.op'],
        ['enabled as a string', [{ ...aRule(), enabled: 'yes' }], 'VALIDATION_FAILED', 'rules.0.enabled'],
        ['a missing metric', [{ ruleId: 'x', op: 'below', threshold: 1, clearAt: 2, forSec: 0, enabled: true }], 'VALIDATION_FAILED', 'rules.0.metric'],
        ['a rule that is not an object', [7], 'VALIDATION_FAILED', 'rules'],
      ];
      for (const [what, rules, code, field] of invalid) {
        for (const target of [gateway, fresh]) {
          const problem = expectProblem(await putRules(t, owner.headers, target.deviceId, { rules } as RulesBody), 400, code);
          expect({ what, fields: fieldsOf(problem) }).toEqual({ what, fields: expect.arrayContaining([field]) });
        }
      }
      const notAList = expectProblem(await putRules(t, owner.headers, gateway.deviceId, { rules: { ruleId: 'x' } } as unknown as RulesBody), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(notAList)).toContain('rules');

      expect((await rulesOf(t, owner.headers, gateway.deviceId)).data).toEqual({ rules: kept, inherited: false });
      expect((await rulesOf(t, owner.headers, fresh.deviceId)).data).toEqual({ rules: SHIPPED_DEFAULTS, inherited: true });
      // An empty set is valid: the device then has no rules at all.
      const { data } = await putRules(t, owner.headers, fresh.deviceId, { rules: [] });
      expect(data).toEqual({ rules: [], inherited: false });
    });

    it('belong to the owner and administrators: another customer gets 404 on GET, PUT and DELETE, an unknown device 404, no token 401', async () => {
      const gateway = await aGateway(t, owner);
      const mine = [aRule({ ruleId: 'mine' })];
      await ownRules(t, owner, gateway, mine);

      expectProblem(await rulesOf(t, stranger.headers, gateway.deviceId), 404, 'NOT_FOUND');
      expectProblem(await putRules(t, stranger.headers, gateway.deviceId, { rules: [aRule({ ruleId: 'theirs' })] }), 404, 'NOT_FOUND');
      expectProblem(await deleteRules(t, stranger.headers, gateway.deviceId), 404, 'NOT_FOUND');
      expectProblem(await rulesOf(t, owner.headers, 'gw-unknown'), 404, 'NOT_FOUND');
      expectProblem(await putRules(t, owner.headers, 'gw-unknown', { rules: mine }), 404, 'NOT_FOUND');
      expectProblem(await rulesOf(t, undefined, gateway.deviceId), 401);
      expectProblem(await putRules(t, undefined, gateway.deviceId, { rules: mine }), 401);
      expect((await rulesOf(t, owner.headers, gateway.deviceId)).data).toEqual({ rules: mine, inherited: false });

      expect((await rulesOf(t, admin.headers, gateway.deviceId)).data).toEqual({ rules: mine, inherited: false });
      const byAdmin = [aRule({ ruleId: 'by-admin', forSec: 30 })];
      expect((await putRules(t, admin.headers, gateway.deviceId, { rules: byAdmin })).data).toEqual({ rules: byAdmin, inherited: false });
      expect((await rulesOf(t, owner.headers, gateway.deviceId)).data).toEqual({ rules: byAdmin, inherited: false });
      expect((await deleteRules(t, admin.headers, gateway.deviceId)).data).toEqual({ rules: SHIPPED_DEFAULTS, inherited: true });
      expect((await rulesOf(t, owner.headers, gateway.deviceId)).data).toEqual({ rules: SHIPPED_DEFAULTS, inherited: true });
    });
  });

  describe('late, out-of-order and repeated records do not make an alert flap', () => {
    it('records in shuffled order are judged in ts order; late records, retries and values inside the band move nothing; exactly one open and one resolve', async () => {
      const gateway = await aGateway(t, owner);
      const rule = aRule({ ruleId: 'soc-2min', forSec: 120 });
      await ownRules(t, owner, gateway, [rule]);
      const t2 = base + 120 * S;

      // Shuffled: taken in the order given, the newest record would start the run and nothing would open.
      const first = [record(t2, { soc: 14 }), record(base, { soc: 15 }), record(base + 60 * S, { soc: 15 })];
      await sent(t, gateway, first);
      const opened = anAlert(gateway.deviceId, rule, t2, 14);
      const [alert] = await eventually(async () => {
        const alerts = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
        expect(alerts).toEqual([opened]);
        return alerts;
      });

      // Late: every one before t2 and each would clear the alert.
      await sent(t, gateway, [record(base + 30 * S, { soc: 30 }), record(base + 90 * S, { soc: 30 }), record(t2 - S, { soc: 30 })]);
      // A retried batch: stored already, changes nothing.
      await sent(t, gateway, first, { accepted: 0, duplicates: 3 });
      // A late clearing record next to a new breaching one.
      await sent(t, gateway, [record(t2 + 60 * S, { soc: 16 }), record(base + 100 * S, { soc: 40 })]);
      // Alternating around the threshold, always inside the band (below clearAt 25).
      await sent(t, gateway, [19, 22, 18, 24, 17, 24.9].map((soc, i) => record(t2 + (120 + i * 30) * S, { soc })));
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([alert]);
      expect(await alertEvents(t, owner, gateway.deviceId)).toEqual([openedEvent(alert)]);

      const clearedAt = t2 + 600 * S;
      await sent(t, gateway, [record(clearedAt, { soc: 25 })]);
      const resolved = { ...alert, ...resolvedAt(clearedAt, 25) };
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([resolved]));

      // Late breaching records spanning more than forSec: counted, they would open a new alert.
      await sent(t, gateway, [record(clearedAt - 200 * S, { soc: 5 }), record(clearedAt - 130 * S, { soc: 5 }), record(clearedAt - 10 * S, { soc: 5 }), record(clearedAt - S, { soc: 5 })]);
      // The retry of the clearing record.
      await sent(t, gateway, [record(clearedAt, { soc: 25 })], { accepted: 0, duplicates: 1 });
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([resolved]);
      expect(await alertEvents(t, owner, gateway.deviceId)).toEqual([openedEvent(resolved), resolvedEvent(resolved)]);
    });

    it('a run broken by a value inside the band never opens a forSec rule; a late record cannot complete a run either', async () => {
      const gateway = await aGateway(t, owner);
      // soc-low of the defaults: below 20 for 600 s. Breaches alternate with values in the band for 19 minutes, the last one in the band.
      await sent(t, gateway, Array.from({ length: 20 }, (_, i) => record(base + i * 60 * S, { soc: i % 2 === 0 ? 19 : 21 })));
      // A new run from base + 1260 s, with late breaching records from 59 s to 1139 s: counted, they would make a run of 600 s and more.
      await sent(t, gateway, [record(base + 1260 * S, { soc: 10 }), ...Array.from({ length: 10 }, (_, i) => record(base + (2 * i + 1) * 60 * S - S, { soc: 10 }))]);
      await sent(t, gateway, [record(base + 1800 * S, { soc: 10 })]);
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([]);

      await sent(t, gateway, [record(base + 1860 * S, { soc: 9 })]);
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([anAlert(gateway.deviceId, SOC_LOW, base + 1860 * S, 9)]));
    });

    it('forSec 0 alternating across threshold and band opens once; a shuffled batch that opens and clears gives opened then resolved; a later breach opens a second alert', async () => {
      const gateway = await aGateway(t, owner);
      const rule = aRule();
      await ownRules(t, owner, gateway, [rule]);

      await sent(t, gateway, [19, 21, 19.5, 24, 18, 24.9, 10].map((soc, i) => record(base + i * 10 * S, { soc })));
      const first = anAlert(gateway.deviceId, rule, base, 19);
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([first]));
      await settled();
      const [firstSeen] = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
      expect(firstSeen).toEqual(first);
      expect(await alertEvents(t, owner, gateway.deviceId)).toEqual([openedEvent(firstSeen)]);

      // In ts order: resolves at +100 s (25.1), opens at +110 s (5), resolves at +130 s (30).
      const shuffled = [record(base + 130 * S, { soc: 30 }), record(base + 110 * S, { soc: 5 }), record(base + 100 * S, { soc: 25.1 }), record(base + 120 * S, { soc: 22 })];
      await sent(t, gateway, shuffled);
      const firstResolved = { ...first, ...resolvedAt(base + 100 * S, 25.1) };
      const second = anAlert(gateway.deviceId, rule, base + 110 * S, 5, resolvedAt(base + 130 * S, 30));
      const alerts = await eventually(async () => {
        const seen = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
        expect(seen).toEqual([second, firstResolved]);
        return seen;
      });
      await settled();
      expect(await alertEvents(t, owner, gateway.deviceId)).toEqual([openedEvent(alerts[1]), resolvedEvent(alerts[1]), openedEvent(alerts[0]), resolvedEvent(alerts[0])]);

      // Of two records with one timestamp the first is stored and judged; the second, with another value, is refused as a conflict.
      const twice = await ingest(t.api, gateway.accessToken, [record(base + 140 * S, { soc: 10 }), record(base + 140 * S, { soc: 40 })]);
      expect(twice.data).toEqual({ accepted: 1, duplicates: 0, rejected: [{ index: 1, code: 'CONFLICTS_WITH_STORED' }] });
      const third = anAlert(gateway.deviceId, rule, base + 140 * S, 10);
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([third, ...alerts]));
    });
  });

  describe('temperature rules and several batteries', () => {
    it('each battery is its own series: the defaults open and resolve temperature-high on one and temperature-low on the other', async () => {
      const gateway = await aGateway(t, owner);
      const at = (sec: number, p1: number, p2: number) => [record(base + sec * S, { temperature: p1, soc: 80 }, 'pack-1'), record(base + sec * S, { temperature: p2, soc: 80 }, 'pack-2')];
      // A breach that moves from one battery to the other never lasts 60 s on either.
      await sent(t, gateway, [...at(0, 56, 20), ...at(30, 57, 56), ...at(60, 58, 20)]);
      await sent(t, gateway, [...at(90, 54, -11), ...at(120, 50, -12), ...at(150, 20, -15)]);
      await sent(t, gateway, [...at(180, -20, -6), ...at(210, 20, -5), ...at(240, -30, 20)]);

      const hot = anAlert(gateway.deviceId, TEMPERATURE_HIGH, base + 60 * S, 58, { batteryId: 'pack-1', ...resolvedAt(base + 120 * S, 50) });
      const cold = anAlert(gateway.deviceId, TEMPERATURE_LOW, base + 150 * S, -15, { batteryId: 'pack-2', ...resolvedAt(base + 210 * S, -5) });
      const alerts = await eventually(async () => {
        const seen = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
        expect(seen).toEqual([cold, hot]);
        return seen;
      });
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual(alerts);
      expect(await alertEvents(t, owner, gateway.deviceId)).toEqual([openedEvent(alerts[1]), resolvedEvent(alerts[1]), openedEvent(alerts[0]), resolvedEvent(alerts[0])]);
    });

    it('batteries uploaded in separate requests over the same minutes are each judged on their own records: one battery’s newer records do not make another’s late', async () => {
      const gateway = await aGateway(t, owner);
      // A gateway that uploads each battery's last two minutes on its own: pack-1 normal, then pack-2 hot.
      await sent(t, gateway, [0, 30, 60, 90, 120].map((sec) => record(base + sec * S, { temperature: 30 }, 'pack-1')));
      await sent(t, gateway, [0, 30, 60, 90, 120].map((sec) => record(base + sec * S, { temperature: 60 }, 'pack-2')));
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([anAlert(gateway.deviceId, TEMPERATURE_HIGH, base + 60 * S, 60, { batteryId: 'pack-2' })]);
    });

    it('a rule with a batteryId watches that battery only', async () => {
      const gateway = await aGateway(t, owner);
      const rule = aRule({ ruleId: 'pack-2-hot', metric: 'temperature', op: 'above', threshold: 40, clearAt: 35, batteryId: 'pack-2' });
      await ownRules(t, owner, gateway, [rule]);
      await sent(t, gateway, [record(base, { temperature: 45 }, 'pack-1'), record(base, { temperature: 45 }, 'pack-2'), record(base + S, { temperature: 46 })]);
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([anAlert(gateway.deviceId, rule, base, 45, { batteryId: 'pack-2' })]));
      await settled();
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([anAlert(gateway.deviceId, rule, base, 45, { batteryId: 'pack-2' })]);
    });
  });

  describe('acknowledge and visibility', () => {
    it('open → acknowledged (once: a repeat keeps the first time), the state filter follows, and the acknowledged alert still resolves by itself', async () => {
      const gateway = await aGateway(t, owner);
      const rule = aRule();
      await ownRules(t, owner, gateway, [rule]);
      await sent(t, gateway, [record(base, { soc: 10 })]);
      const [opened] = await eventually(async () => {
        const alerts = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'open' });
        expect(alerts).toEqual([anAlert(gateway.deviceId, rule, base, 10)]);
        return alerts;
      });

      const before = Date.now();
      const first = await acknowledge(t, owner.headers, opened.alertId);
      const after = Date.now();
      expect({ status: first.response.status, body: first.data }).toEqual({ status: 200, body: { ...opened, state: 'acknowledged', acknowledgedAt: expect.any(String) } });
      expectWithin(first.data!.acknowledgedAt, before, after);
      const acknowledged = first.data!;

      const again = await acknowledge(t, owner.headers, opened.alertId);
      expect({ status: again.response.status, body: again.data }).toEqual({ status: 200, body: acknowledged });
      expect((await acknowledge(t, admin.headers, opened.alertId)).data).toEqual(acknowledged);
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'open' })).toEqual([]);
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'acknowledged' })).toEqual([acknowledged]);
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'resolved' })).toEqual([]);

      await sent(t, gateway, [record(base + 60 * S, { soc: 30 })]);
      const resolved = { ...acknowledged, ...resolvedAt(base + 60 * S, 30) };
      await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'resolved' })).toEqual([resolved]));
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId, state: 'acknowledged' })).toEqual([]);
      expect((await acknowledge(t, owner.headers, opened.alertId)).data).toEqual(resolved);
      expect(await alertEvents(t, owner, gateway.deviceId)).toEqual([openedEvent(resolved), resolvedEvent(resolved)]);
    });

    it('another customer sees none of the alerts and gets 404 on acknowledge; an administrator sees all; bad ids 400, unknown 404, no token 401', async () => {
      const gateway = await aGateway(t, owner);
      const rule = aRule();
      await ownRules(t, owner, gateway, [rule]);
      await sent(t, gateway, [record(base, { soc: 10 })]);
      const [opened] = await eventually(async () => {
        const alerts = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
        expect(alerts).toEqual([anAlert(gateway.deviceId, rule, base, 10)]);
        return alerts;
      });

      expect(await alertsSeenBy(t, stranger)).toEqual([]);
      expect(await alertsSeenBy(t, stranger, { deviceId: gateway.deviceId })).toEqual([]);
      expect(await alertEvents(t, stranger, gateway.deviceId)).toEqual([]);
      expectProblem(await acknowledge(t, stranger.headers, opened.alertId), 404, 'NOT_FOUND');
      expect(await alertsSeenBy(t, owner, { deviceId: gateway.deviceId })).toEqual([opened]);

      expect(await alertsSeenBy(t, admin, { deviceId: gateway.deviceId })).toEqual([opened]);
      expect(await alertsSeenBy(t, admin)).toEqual(expect.arrayContaining([opened]));
      expect(await alertEvents(t, admin, gateway.deviceId)).toEqual([openedEvent(opened)]);

      expectProblem(await acknowledge(t, owner.headers, '00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND');
      expect(fieldsOf(expectProblem(await acknowledge(t, owner.headers, 'not-a-uuid'), 400, 'VALIDATION_FAILED'))).toEqual(['alertId']);
      expectProblem(await acknowledge(t, undefined, opened.alertId), 401);
      expectProblem(await listAlerts(t, undefined), 401);
      expect(fieldsOf(expectProblem(await listAlerts(t, owner.headers, { state: 'closed' as AlertsQuery['state'] }), 400, 'VALIDATION_FAILED'))).toContain('state');
    });

    it('a later owner sees the alerts opened from the release on, not those before; the former owner no longer sees any', async () => {
      const first = owner;
      const later = await aCustomer(t);
      const gateway = await aGateway(t, first);
      const rule = aRule();
      await ownRules(t, first, gateway, [rule]);
      // Visibility compares the gateway's times with the release: these records are recent.
      const before = Date.now() - 60 * S;
      await sent(t, gateway, [record(before, { soc: 10 }), record(before + S, { soc: 30 })]);
      const [old] = await eventually(async () => {
        const alerts = await alertsSeenBy(t, first, { deviceId: gateway.deviceId });
        expect(alerts).toEqual([anAlert(gateway.deviceId, rule, before, 10, resolvedAt(before + S, 30))]);
        return alerts;
      });

      expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: gateway.deviceId } }, headers: first.headers })).response.status).toBe(204);
      expect((await claim(t, later, { deviceId: gateway.deviceId, claimCode: gateway.claimCode })).response.status).toBe(200);
      const afterClaim = Date.now() + S;
      await sent(t, gateway, [record(afterClaim, { soc: 12 })]);
      const fresh = await eventually(async () => {
        const alerts = await alertsSeenBy(t, admin, { deviceId: gateway.deviceId });
        expect(alerts).toEqual([expect.objectContaining({ openedAt: iso(afterClaim), value: 12 }), old]);
        return alerts[0];
      });

      expect(await alertsSeenBy(t, later, { deviceId: gateway.deviceId })).toEqual([fresh]);
      expect(await alertEvents(t, later, gateway.deviceId)).toEqual([openedEvent(fresh)]);
      expectProblem(await acknowledge(t, later.headers, old.alertId), 404, 'NOT_FOUND');
      expect(await alertsSeenBy(t, first, { deviceId: gateway.deviceId })).toEqual([]);
      expectProblem(await acknowledge(t, first.headers, fresh.alertId), 404, 'NOT_FOUND');
    });
  });

  describe('paging', () => {
    it('limit and cursor walk the alerts newest first, ties on openedAt included, without gaps or repeats; a bad cursor is a 400', async () => {
      const gateway = await aGateway(t, owner);
      const rule = aRule();
      await ownRules(t, owner, gateway, [rule]);
      // Five alerts on main (open at 0, 120, …, 480 s, each resolved 60 s later) and one on pack-2 opened with the last.
      const records = Array.from({ length: 10 }, (_, i) => record(base + i * 60 * S, { soc: i % 2 === 0 ? 10 : 30 }));
      await sent(t, gateway, [...records, record(base + 480 * S, { soc: 11 }, 'pack-2')]);
      const all = await eventually(async () => {
        const alerts = await alertsSeenBy(t, owner, { deviceId: gateway.deviceId });
        expect(alerts).toHaveLength(6);
        return alerts;
      });
      const summary = all.map((alert) => [alert.openedAt, alert.batteryId, alert.state]);
      expect(summary.slice(0, 2)).toEqual(expect.arrayContaining([[iso(base + 480 * S), 'main', 'resolved'], [iso(base + 480 * S), 'pack-2', 'open']]));
      expect(summary.slice(2)).toEqual([
        [iso(base + 360 * S), 'main', 'resolved'],
        [iso(base + 240 * S), 'main', 'resolved'],
        [iso(base + 120 * S), 'main', 'resolved'],
        [iso(base), 'main', 'resolved'],
      ]);
      // The two of one instant come in alertId order, descending.
      expect(all[0].alertId > all[1].alertId).toBe(true);

      for (const limit of [1, 2, 4]) {
        const walked: Alert[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 10; page += 1) {
          const { data, response } = await listAlerts(t, owner.headers, { deviceId: gateway.deviceId, limit, ...(cursor === undefined ? {} : { cursor }) });
          expect(response.status).toBe(200);
          expect(data!.items.length).toBeLessThanOrEqual(limit);
          walked.push(...data!.items);
          if (data!.nextCursor === null) break;
          cursor = data!.nextCursor;
        }
        expect({ limit, walked }).toEqual({ limit, walked: all });
      }

      for (const cursor of ['garbage', 'bm90LWEtY3Vyc29y', Buffer.from(`${iso(base)}|not-a-uuid`).toString('base64url')]) {
        expect(fieldsOf(expectProblem(await listAlerts(t, owner.headers, { cursor }), 400, 'VALIDATION_FAILED'))).toEqual(['cursor']);
      }
      for (const limit of [0, 201]) {
        expect(fieldsOf(expectProblem(await listAlerts(t, owner.headers, { limit }), 400, 'VALIDATION_FAILED'))).toContain('limit');
      }
    });
  });
});

describe('fleet default alert rules', () => {
  let t: TestApp;
  let admin: SignedIn;
  let settled: () => Promise<void>;

  function getDefaults(who: Headers | undefined) {
    return t.api.GET('/api/v1/admin/alert-rules/defaults', { headers: who });
  }
  function putDefaults(who: Headers | undefined, body: RulesBody) {
    return t.api.PUT('/api/v1/admin/alert-rules/defaults', { body, headers: who });
  }

  beforeAll(async () => {
    // An app of its own: changing the defaults would change what the other suites expect.
    t = await createTestApp(ADMIN_SETTINGS);
    admin = await anAdmin(t);
    settled = await aBarrier(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('only administrators read and replace them (customers 403, no token 401); invalid sets are refused with 400 and change nothing', async () => {
    const customer = await aCustomer(t);
    expect((await getDefaults(admin.headers)).data).toEqual({ rules: SHIPPED_DEFAULTS });
    expectProblem(await getDefaults(customer.headers), 403, 'FORBIDDEN');
    expectProblem(await putDefaults(customer.headers, { rules: [aRule()] }), 403, 'FORBIDDEN');
    expectProblem(await getDefaults(undefined), 401);
    expectProblem(await putDefaults(undefined, { rules: [aRule()] }), 401);

    expect(fieldsOf(expectProblem(await putDefaults(admin.headers, { rules: [aRule({ op: 'above', threshold: 10, clearAt: 20 })] }), 400, 'INVALID_ALERT_RULE'))).toEqual(['rules[0].clearAt']);
    expect(fieldsOf(expectProblem(await putDefaults(admin.headers, { rules: [aRule(), aRule()] }), 400, 'INVALID_ALERT_RULE'))).toEqual(['rules[1].ruleId']);
    expect(fieldsOf(expectProblem(await putDefaults(admin.headers, { rules: [{ ...aRule(), forSec: '0' }] } as unknown as RulesBody), 400, 'VALIDATION_FAILED'))).toContain('rules.0.forSec');
    expect((await getDefaults(admin.headers)).data).toEqual({ rules: SHIPPED_DEFAULTS });
  });

  it('new defaults change what devices without rules of their own do; a removed or disabled default resolves its open alerts (rule_removed); devices with own rules are untouched', async () => {
    const owner = await aCustomer(t);
    const [follower, independent, newcomer] = await Promise.all([aGateway(t, owner), aGateway(t, owner), aGateway(t, owner)]);
    const ownSoc = aRule({ ruleId: 'own-soc', threshold: 5, clearAt: 6 });
    await ownRules(t, owner, independent, [ownSoc]);

    // Under the shipped defaults: temperature-high opens at +60 s, soc-low at +600 s.
    const hot = Array.from({ length: 11 }, (_, i) => record(base + i * 60 * S, { soc: 15, temperature: 60, voltage: 48 }));
    await sent(t, follower, hot);
    await sent(t, independent, hot);
    const socOpen = anAlert(follower.deviceId, SOC_LOW, base + 600 * S, 15);
    const hotOpen = anAlert(follower.deviceId, TEMPERATURE_HIGH, base + 60 * S, 60);
    await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: follower.deviceId })).toEqual([socOpen, hotOpen]));
    const [socAlert, hotAlert] = await alertsSeenBy(t, owner, { deviceId: follower.deviceId });

    const socTighter = { ...SOC_LOW, threshold: 30, clearAt: 35, forSec: 0 };
    const voltageLow = aRule({ ruleId: 'voltage-low', metric: 'voltage', threshold: 44, clearAt: 46 });
    const next = [socTighter, TEMPERATURE_LOW, voltageLow];
    const before = Date.now();
    const put = await putDefaults(admin.headers, { rules: next });
    const after = Date.now();
    expect({ status: put.response.status, body: put.data }).toEqual({ status: 200, body: { rules: next } });
    expect((await getDefaults(admin.headers)).data).toEqual({ rules: next });
    expect((await rulesOf(t, owner.headers, follower.deviceId)).data).toEqual({ rules: next, inherited: true });
    expect((await rulesOf(t, owner.headers, independent.deviceId)).data).toEqual({ rules: [ownSoc], inherited: false });

    const hotRemoved = { ...hotAlert, state: 'resolved' as const, resolvedAt: expect.any(String), resolvedValue: null };
    const afterPut = await alertsSeenBy(t, owner, { deviceId: follower.deviceId });
    expect(afterPut).toEqual([socAlert, hotRemoved]);
    expectWithin(afterPut[1].resolvedAt, before, after);
    // Both openings came from one batch: their order between them is not part of the contract.
    const eventsAfterPut = await alertEvents(t, owner, follower.deviceId);
    expect(eventsAfterPut).toHaveLength(3);
    expect(eventsAfterPut.slice(0, 2)).toEqual(expect.arrayContaining([openedEvent(hotAlert), openedEvent(socAlert)]));
    expect(eventsAfterPut[2]).toEqual(resolvedEvent(afterPut[1], 'rule_removed'));

    // 28 clears soc-low by the shipped clearAt (25), not by the new one (35); voltage 43 breaches the new rule at once.
    await sent(t, follower, [record(base + 660 * S, { soc: 28, temperature: 60, voltage: 43 })]);
    await sent(t, independent, [record(base + 660 * S, { soc: 28, temperature: 60, voltage: 43 })]);
    const voltageOpen = anAlert(follower.deviceId, voltageLow, base + 660 * S, 43);
    await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: follower.deviceId })).toEqual([voltageOpen, socAlert, afterPut[1]]));
    await sent(t, follower, [record(base + 720 * S, { soc: 36, voltage: 43 })]);
    const socResolved = { ...socAlert, ...resolvedAt(base + 720 * S, 36) };
    await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: follower.deviceId, state: 'resolved' })).toEqual([socResolved, afterPut[1]]));

    // A device that sends its first record now follows the new defaults.
    await sent(t, newcomer, [record(base, { soc: 29 })]);
    await eventually(async () => expect(await alertsSeenBy(t, owner, { deviceId: newcomer.deviceId })).toEqual([anAlert(newcomer.deviceId, socTighter, base, 29)]));

    // Disabling a default resolves its open alert too.
    const [voltageAlert] = await alertsSeenBy(t, owner, { deviceId: follower.deviceId, state: 'open' });
    expect(voltageAlert).toEqual(voltageOpen);
    await putDefaults(admin.headers, { rules: [socTighter, TEMPERATURE_LOW, { ...voltageLow, enabled: false }] });
    const [voltageRemoved] = await alertsSeenBy(t, owner, { deviceId: follower.deviceId, state: 'resolved' });
    expect(voltageRemoved).toEqual({ ...voltageAlert, state: 'resolved', resolvedAt: expect.any(String), resolvedValue: null });
    await sent(t, follower, [record(base + 780 * S, { soc: 50, voltage: 40 })]);
    await settled();

    expect(await alertsSeenBy(t, owner, { deviceId: independent.deviceId })).toEqual([]);
    expect(await alertsSeenBy(t, owner, { deviceId: follower.deviceId })).toEqual([voltageRemoved, socResolved, afterPut[1]]);
    expect(await alertEvents(t, owner, follower.deviceId)).toEqual([
      ...eventsAfterPut,
      openedEvent(voltageAlert),
      resolvedEvent(socResolved),
      resolvedEvent(voltageRemoved, 'rule_removed'),
    ]);
  });
});
