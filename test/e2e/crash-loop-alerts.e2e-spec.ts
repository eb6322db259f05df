import type { components } from '@device-cloud/client';
import { AlertMonitor } from '../../src/modules/alerts/index.js';
import { bearer } from '../support/builders.js';
import { aClaimedDevice, aCustomer, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { jobsSettled } from '../support/jobs.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { ingest } from '../support/telemetry.js';

type Report = components['schemas']['CrashReportRequest'];
type AlertRule = components['schemas']['AlertRuleDto'];
type Headers = { authorization: string };

interface Gateway {
  deviceId: string;
  headers: Headers;
  accessToken: string;
}

async function aGateway(t: TestApp, owner: SignedIn): Promise<Gateway> {
  const { body, registered } = await aClaimedDevice(t, owner);
  return { deviceId: body.deviceId, headers: bearer(registered.accessToken), accessToken: registered.accessToken };
}

let reports = 0;
function aCrash(overrides: Partial<Report> = {}): Report {
  reports++;
  return { crashId: `crash-${reports}`, ts: new Date().toISOString(), firmwareVersion: '1.4.2', resetReason: 'task_wdt', uptimeSec: 40, ...overrides };
}

async function reported(t: TestApp, gateway: Gateway, body: Report): Promise<void> {
  const { response } = await t.api.POST('/api/v1/device/crashes', { body, headers: gateway.headers });
  expect([200, 201]).toContain(response.status);
}

async function alertsOf(t: TestApp, owner: SignedIn, deviceId: string) {
  const { data, response } = await t.api.GET('/api/v1/dashboard/alerts', { params: { query: { deviceId, limit: 200 } }, headers: owner.headers });
  expect(response.status).toBe(200);
  return data!.items;
}

async function eventsOf(t: TestApp, owner: SignedIn, deviceId: string) {
  const { data, response } = await t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId, limit: 200 } }, headers: owner.headers });
  expect(response.status).toBe(200);
  return data!.items.map(({ type, data: said }) => ({ type, data: said })).reverse();
}

/** The time the window job waits for has come: the service's clock moves on, and the queue's job with it. */
async function windowPassed(t: TestApp, deviceId: string, seconds: number): Promise<void> {
  t.clock.advanceMs(seconds * 1000);
  const { rowCount } = await t.db.query("UPDATE pgboss.job SET start_after = now() WHERE name = 'alerts.crash-window' AND state = 'created' AND data->>'deviceId' = $1", [deviceId]);
  expect(rowCount).toBeGreaterThan(0);
}

describe('crash-loop alerts', () => {
  let t: TestApp;
  let owner: SignedIn;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await aCustomer(t);
  });

  afterEach(() => t.clock.reset());

  afterAll(async () => {
    await t?.close();
  });

  it('opens on the third crash within 10 minutes (the fleet default), once, and resolves by itself when the window has passed', async () => {
    const gateway = await aGateway(t, owner);
    await reported(t, gateway, aCrash({ resetReason: 'panic', panic: { task: 'bms_poll', excCause: 'LoadProhibited', pc: '0x400d2f1c', backtrace: ['0x400d2f1c'] } }));
    const second = aCrash();
    await reported(t, gateway, second);
    // Reboots that are not crashes do not count, nor does a retried report.
    await reported(t, gateway, aCrash({ resetReason: 'brownout' }));
    await reported(t, gateway, aCrash({ resetReason: 'poweron' }));
    await reported(t, gateway, { ...second, uptimeSec: 1 });
    const third = aCrash({ resetReason: 'int_wdt' });
    await jobsSettled(t.db);
    expect(await alertsOf(t, owner, gateway.deviceId)).toEqual([]);

    await reported(t, gateway, third);
    await reported(t, gateway, third);
    const [alert] = await eventually(async () => {
      const alerts = await alertsOf(t, owner, gateway.deviceId);
      expect(alerts).toHaveLength(1);
      return alerts;
    });
    expect(alert).toMatchObject({ deviceId: gateway.deviceId, batteryId: '', ruleId: 'crash-loop', metric: 'crashes', op: 'above', threshold: 2, clearAt: 0, value: 3, state: 'open', resolvedAt: null });

    // A fourth crash while it is open changes nothing.
    await reported(t, gateway, aCrash());
    await jobsSettled(t.db);
    expect(await alertsOf(t, owner, gateway.deviceId)).toEqual([alert]);
    const crashed = (await eventsOf(t, owner, gateway.deviceId)).filter((event) => event.type === 'device.crashed');
    expect(crashed.map((event) => event.data.resetReason)).toEqual(['panic', 'task_wdt', 'int_wdt', 'task_wdt']);
    expect(crashed[2].data).toEqual({ crashId: third.crashId, ts: third.ts, resetReason: 'int_wdt', firmwareVersion: '1.4.2', uptimeSec: 40, groupId: expect.stringMatching(/^[0-9a-f]{16}$/) });

    // Ten minutes without a crash: the count is 0 and the alert resolves, with its event.
    await windowPassed(t, gateway.deviceId, 601);
    const [resolved] = await eventually(async () => {
      const alerts = await alertsOf(t, owner, gateway.deviceId);
      expect(alerts[0].state).toBe('resolved');
      return alerts;
    });
    expect(resolved).toMatchObject({ alertId: alert.alertId, resolvedValue: 0 });
    expect(new Date(resolved.resolvedAt!).getTime()).toBeGreaterThanOrEqual(new Date(alert.openedAt).getTime() + 601_000);
    await jobsSettled(t.db);
    const alertEvents = (await eventsOf(t, owner, gateway.deviceId)).filter((event) => event.type.startsWith('alert.'));
    expect(alertEvents).toEqual([
      { type: 'alert.opened', data: expect.objectContaining({ alertId: alert.alertId, batteryId: '', ruleId: 'crash-loop', value: 3 }) },
      { type: 'alert.resolved', data: expect.objectContaining({ alertId: alert.alertId, value: 0, reason: 'cleared' }) },
    ]);
    expect((await t.db.query('SELECT count(*)::int AS n FROM alert_series WHERE device_id = $1', [gateway.deviceId])).rows[0].n).toBe(0);
  });

  it('is configured like any rule: a device of its own opens on its first crash in a minute, telemetry named "crashes" is not a crash, and disabling resolves', async () => {
    const gateway = await aGateway(t, owner);
    const bootLoop: AlertRule = { ruleId: 'any-crash', metric: 'crashes', op: 'above', threshold: 0, clearAt: 0, forSec: 0, windowSec: 60, enabled: true };
    const put = (rules: AlertRule[]) => t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId: gateway.deviceId } }, body: { rules }, headers: owner.headers });

    const { windowSec: _, ...withoutWindow } = bootLoop;
    expect(fieldsOf(expectProblem(await put([withoutWindow]), 400, 'INVALID_ALERT_RULE'))).toEqual(['rules[0].windowSec']);
    expect(fieldsOf(expectProblem(await put([{ ...bootLoop, batteryId: 'main' }]), 400, 'INVALID_ALERT_RULE'))).toEqual(['rules[0].batteryId']);
    expect((await put([bootLoop])).data).toEqual({ rules: [bootLoop], inherited: false });

    const ingested = await ingest(t.api, gateway.accessToken, [{ ts: new Date().toISOString(), metrics: { crashes: 9, soc: 80 } }]);
    expect(ingested.response.status).toBe(200);
    await t.app.get(AlertMonitor).idle();
    expect(await alertsOf(t, owner, gateway.deviceId)).toEqual([]);

    await reported(t, gateway, aCrash());
    const [alert] = await eventually(async () => {
      const alerts = await alertsOf(t, owner, gateway.deviceId);
      expect(alerts).toHaveLength(1);
      return alerts;
    });
    expect(alert).toMatchObject({ ruleId: 'any-crash', value: 1, state: 'open' });
    await jobsSettled(t.db); // the dispatch that opened it has queued the window's job too

    expect((await put([{ ...bootLoop, enabled: false }])).response.status).toBe(200);
    expect((await alertsOf(t, owner, gateway.deviceId))[0]).toMatchObject({ alertId: alert.alertId, state: 'resolved', resolvedValue: null });
    // Judged again when its window has passed: a disabled rule opens nothing.
    await windowPassed(t, gateway.deviceId, 61);
    await jobsSettled(t.db);
    expect(await alertsOf(t, owner, gateway.deviceId)).toHaveLength(1);
  });
});
