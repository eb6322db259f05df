import type { components } from '@device-cloud/client';
import { bearer } from '../support/builders.js';
import { aClaimedDevice, aCustomer, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problems.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from '../support/smtp-sink.js';
import { ingest, iso, MINUTE, type TelemetryRecordBody } from '../support/telemetry.js';

/**
 * E-mail as a channel of the event log: owners are mailed about alerts opened and resolved,
 * devices gone offline and failed updates, at most one digest a minute, unless they turned alert
 * e-mails off. Real flows cause the events; every mail is a real SMTP conversation with the sink.
 */

type AlertRule = components['schemas']['AlertRuleDto'];
type EventItem = components['schemas']['DeviceEventResponse'];
type EventType = EventItem['type'];

interface Gateway {
  deviceId: string;
  accessToken: string;
}

const PUBLIC_BASE_URL = 'https://dash.example';
/** Opens on the first record with soc below 20, resolves at 25 or more. */
const SOC_NOW: AlertRule = { ruleId: 'soc-now', metric: 'soc', op: 'below', threshold: 20, clearAt: 25, forSec: 0, enabled: true };
/** Every customer of the fixtures also gets the sign-up mail; alert mails are the others. */
const VERIFICATION_SUBJECT = 'Confirm your e-mail address';

async function aGateway(t: TestApp, owner: SignedIn, rules: AlertRule[] = [SOC_NOW]): Promise<Gateway> {
  const { body, registered } = await aClaimedDevice(t, owner);
  const { response } = await t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId: body.deviceId } }, body: { rules }, headers: owner.headers });
  expect(response.status).toBe(200);
  return { deviceId: body.deviceId, accessToken: registered.accessToken };
}

function socRecord(atMs: number, soc: number): TelemetryRecordBody {
  return { ts: iso(atMs), metrics: { soc } };
}

async function sent(t: TestApp, gateway: Gateway, records: TelemetryRecordBody[]): Promise<void> {
  const { data, response } = await ingest(t.api, gateway.accessToken, records);
  expect({ status: response.status, accepted: data?.accepted }).toEqual({ status: 200, accepted: records.length });
}

/** The device's events of one type, oldest first, once there are `count` of them. */
async function eventsOnceThere(t: TestApp, owner: SignedIn, deviceId: string, type: EventType, count = 1, timeoutMs = 10_000): Promise<EventItem[]> {
  return eventually(async () => {
    const { data, response } = await t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId, type, limit: 200 } }, headers: owner.headers });
    expect(response.status).toBe(200);
    expect(data!.items).toHaveLength(count);
    return [...data!.items].reverse();
  }, timeoutMs);
}

/** Waits until the event has been handed to every channel (the mail channel took it, or passed it by). */
async function dispatched(t: TestApp, event: EventItem): Promise<void> {
  await eventually(async () => {
    const { rows } = await t.db.query<{ state: string }>("SELECT state FROM pgboss.job WHERE name = 'events.dispatch' AND data->>'eventId' = $1", [event.id]);
    expect(rows).toEqual([{ state: 'completed' }]);
  });
}

/**
 * Waits until every event has been dispatched, no digest of the owner is waiting or running, and
 * nothing waits for the owner's next digest: the mails they got are all they will get.
 */
async function mailsSettled(t: TestApp, owner: SignedIn, timeoutMs = 10_000): Promise<void> {
  await eventually(async () => {
    const { rows } = await t.db.query<{ dispatching: number; digests: number; waiting: number }>(
      `SELECT (SELECT count(*)::int FROM pgboss.job WHERE name = 'events.dispatch' AND state IN ('created', 'retry', 'active')) AS dispatching,
              (SELECT count(*)::int FROM pgboss.job WHERE name = 'mail.alert-digest' AND data->>'userId' = $1::text AND state IN ('created', 'retry', 'active')) AS digests,
              (SELECT count(*)::int FROM pending_notifications WHERE user_id = $1::uuid) AS waiting`,
      [owner.userId],
    );
    expect(rows[0]).toEqual({ dispatching: 0, digests: 0, waiting: 0 });
  }, timeoutMs);
}

async function setAlertEmails(t: TestApp, owner: SignedIn, alertEmails: boolean): Promise<void> {
  const { data, response } = await t.api.PATCH('/api/v1/users/me', { body: { alertEmails }, headers: owner.headers });
  expect({ status: response.status, alertEmails: data?.alertEmails }).toEqual({ status: 200, alertEmails });
}

async function alertEmailsOf(t: TestApp, owner: SignedIn): Promise<boolean | undefined> {
  const { data, response } = await t.api.GET('/api/v1/users/me', { headers: owner.headers });
  expect(response.status).toBe(200);
  return data?.alertEmails;
}

/** Digest slots: whole minutes of the service's clock. */
const DIGEST_SLOT_MS = 60_000;

/**
 * Moves the service's clock to 15 s before the end of a digest slot: a burst sent now lies well
 * inside one slot (one straddling the turn may take the slot it started in, the next and, for what
 * came after the turn, the one after that), and a digest it leaves for the next slot comes soon.
 */
function burstPlacedInOneSlot(t: TestApp): number {
  const intoSlot = t.clock.now().getTime() % DIGEST_SLOT_MS;
  t.clock.advanceMs((DIGEST_SLOT_MS - 15_000 - intoSlot + DIGEST_SLOT_MS) % DIGEST_SLOT_MS);
  return t.clock.now().getTime();
}

/** The lines of a digest that tell an event (each starts with its instant). */
const eventLines = (mail: ReceivedMail) => mail.text.split('\n').filter((line) => /^\d{4}-\d\d-\d\dT/.test(line));

describe('alert e-mails', () => {
  let t: TestApp;
  let sink: SmtpSink;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ SMTP_URL: sink.url, PUBLIC_BASE_URL, OFFLINE_CHECK_INTERVAL_MS: '300', JOB_POLL_INTERVAL_MS: '500' });
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  // A test that moved the service's clock moves it back: later sign-ins would be from the future.
  afterEach(() => {
    t.clock.reset();
  });

  const alertMails = (owner: SignedIn) => sink.messagesTo(owner.email).filter((mail) => mail.subject !== VERIFICATION_SUBJECT);

  /** The owner's alert mails once there are `count` of them. */
  function mailsOnceThere(owner: SignedIn, count = 1, timeoutMs = 10_000): Promise<ReceivedMail[]> {
    return eventually(() => {
      expect(alertMails(owner)).toHaveLength(count);
      return alertMails(owner);
    }, timeoutMs);
  }

  /** Asserts a digest of one event: to the owner alone, naming the device and saying what happened. */
  function expectOneEventMail(mail: ReceivedMail, owner: SignedIn, event: EventItem, says: RegExp[]): void {
    expect(mail.to).toEqual([owner.email]);
    expect(mail.subject).toMatch(/^Device Cloud: /);
    expect(mail.subject).toContain(event.deviceId);
    const lines = eventLines(mail);
    expect(lines).toHaveLength(1);
    expect(lines[0].startsWith(`${event.occurredAt}  ${event.deviceId}`)).toBe(true);
    for (const pattern of says) expect(lines[0]).toMatch(pattern);
    expect(mail.text).toContain(`${PUBLIC_BASE_URL}/api/v1/users/me`);
  }

  it("an organization's device: each of its owners, admins and operators with alert e-mails on gets the mail; viewers and those who turned them off do not", async () => {
    const owner = await aCustomer(t);
    const created = await t.api.POST('/api/v1/organizations', { body: { name: 'Fleet Ops' }, headers: owner.headers });
    const organizationId = created.data!.organizationId;
    const members: Record<'admin' | 'operator' | 'quietOperator' | 'mutedHere' | 'viewer', SignedIn> = {
      admin: await aCustomer(t),
      operator: await aCustomer(t),
      quietOperator: await aCustomer(t),
      mutedHere: await aCustomer(t),
      viewer: await aCustomer(t),
    };
    const memberIds: Partial<Record<keyof typeof members, string>> = {};
    for (const [who, role] of [['admin', 'admin'], ['operator', 'operator'], ['quietOperator', 'operator'], ['mutedHere', 'admin'], ['viewer', 'viewer']] as const) {
      const invited = await t.api.POST('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, body: { email: members[who].email, role }, headers: owner.headers });
      expect(invited.response.status).toBe(201);
      expect(invited.data!.alertEmails).toBe(true);
      memberIds[who] = invited.data!.memberId;
    }
    await setAlertEmails(t, members.quietOperator, false);
    // Off for this organization only, by the member themself: the owner may not choose it for them.
    const mute = (who: SignedIn, memberId: string) =>
      t.api.PATCH('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId } }, body: { alertEmails: false }, headers: who.headers });
    expectProblem(await mute(owner, memberIds.operator!), 403, 'ORGANIZATION_ROLE');
    const muted = await mute(members.mutedHere, memberIds.mutedHere!);
    expect(muted.response.status).toBe(200);
    expect(muted.data).toMatchObject({ memberId: memberIds.mutedHere, role: 'admin', alertEmails: false });
    const device = await aRegisteredDevice(t);
    expect((await claim(t, members.operator, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
    const rules = await t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId: device.body.deviceId } }, body: { rules: [SOC_NOW] }, headers: members.operator.headers });
    expect(rules.response.status).toBe(200);

    await sent(t, { deviceId: device.body.deviceId, accessToken: device.registered.accessToken }, [socRecord(Date.now() - 1000, 5)]);

    const [opened] = await eventsOnceThere(t, members.viewer, device.body.deviceId, 'alert.opened');
    for (const mailed of [owner, members.admin, members.operator]) {
      const [mail] = await mailsOnceThere(mailed);
      expectOneEventMail(mail, mailed, opened, [/\bsoc\b/, /below 20/, /opened/]);
    }
    await dispatched(t, opened);
    for (const who of [owner, ...Object.values(members)]) await mailsSettled(t, who);
    expect(alertMails(members.viewer)).toEqual([]);
    expect(alertMails(members.quietOperator)).toEqual([]);
    expect(alertMails(members.mutedHere)).toEqual([]);
    for (const mailed of [owner, members.admin, members.operator]) expect(alertMails(mailed)).toHaveLength(1);
  });

  describe('one mail for each kind of event the owner is told about', () => {
    it('alert.opened: one digest mail to the verified owner, naming the device and the metric', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(t, owner);

      await sent(t, gateway, [socRecord(Date.now() - 1000, 5)]);

      const [opened] = await eventsOnceThere(t, owner, gateway.deviceId, 'alert.opened');
      const [mail] = await mailsOnceThere(owner);
      expectOneEventMail(mail, owner, opened, [/\bsoc\b/, /below 20/, /\b5\b/, /opened/]);
      await mailsSettled(t, owner);
      expect(alertMails(owner)).toHaveLength(1);
    });

    it('alert.resolved: a mail naming the device, the metric and the value it came back to', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(t, owner);
      // Opened while the owner's alert e-mails are off, so the resolution is the only thing to mail.
      await setAlertEmails(t, owner, false);
      await sent(t, gateway, [socRecord(Date.now() - 2000, 5)]);
      await dispatched(t, (await eventsOnceThere(t, owner, gateway.deviceId, 'alert.opened'))[0]);
      await setAlertEmails(t, owner, true);

      await sent(t, gateway, [socRecord(Date.now() - 1000, 30)]);

      const [resolved] = await eventsOnceThere(t, owner, gateway.deviceId, 'alert.resolved');
      const [mail] = await mailsOnceThere(owner);
      expectOneEventMail(mail, owner, resolved, [/\bsoc\b/, /\b30\b/, /resolved/]);
      expect(mail.text).not.toContain('opened');
      await mailsSettled(t, owner);
      expect(alertMails(owner)).toHaveLength(1);
    });

    it('ota.failed: a mail naming the device, the versions and the report', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(t, owner);

      const { response } = await t.api.POST('/api/v1/ota/events', {
        body: { events: [{ ts: iso(Date.now() - MINUTE), type: 'install_failed', fromVersion: '0.1.4', toVersion: '0.1.50', errorCode: 'E_FLASH_WRITE' }] },
        headers: bearer(gateway.accessToken),
      });
      expect(response.status).toBe(200);

      const [failed] = await eventsOnceThere(t, owner, gateway.deviceId, 'ota.failed');
      const [mail] = await mailsOnceThere(owner);
      expectOneEventMail(mail, owner, failed, [/0\.1\.4/, /0\.1\.50/, /install_failed/, /E_FLASH_WRITE/]);
      await mailsSettled(t, owner);
      expect(alertMails(owner)).toHaveLength(1);
    });

    it('device.offline: a mail once the device was silent for 3 of its telemetry intervals (5 s here)', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(t, owner);
      const { response } = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', {
        params: { path: { deviceId: gateway.deviceId } },
        body: { telemetryIntervalSec: 5 },
        headers: owner.headers,
      });
      expect(response.status).toBe(200);

      await sent(t, gateway, [socRecord(Date.now(), 80)]);
      // Silent for 3 intervals on the service's clock.
      t.clock.advanceMs(16_000);

      const [offline] = await eventsOnceThere(t, owner, gateway.deviceId, 'device.offline', 1, 30_000);
      const [mail] = await mailsOnceThere(owner);
      expectOneEventMail(mail, owner, offline, [/offline/, new RegExp(String(offline.data.lastTelemetryAt).replace(/\./g, '\\.'))]);
      await mailsSettled(t, owner);
      expect(alertMails(owner)).toHaveLength(1);
    });
  });

  it('a burst over 5 devices of one owner within a second: at most 2 mails within the first minute, naming all 5, each alert in exactly one of them', async () => {
    const owner = await aCustomer(t);
    const gateways: Gateway[] = [];
    for (let i = 0; i < 5; i++) gateways.push(await aGateway(t, owner));
    const at = burstPlacedInOneSlot(t);
    const started = Date.now();

    await Promise.all(gateways.map((gateway) => sent(t, gateway, [socRecord(at - 1000, 5)])));

    await eventually(() => {
      const named = gateways.filter((gateway) => alertMails(owner).some((mail) => mail.text.includes(gateway.deviceId)));
      expect(named).toHaveLength(gateways.length);
    }, 75_000);
    expect(Date.now() - started).toBeLessThan(65_000);
    await mailsSettled(t, owner, 75_000);

    const mails = alertMails(owner);
    expect(mails.length).toBeGreaterThanOrEqual(1);
    expect(mails.length).toBeLessThanOrEqual(2);
    const opened = (await Promise.all(gateways.map((gateway) => eventsOnceThere(t, owner, gateway.deviceId, 'alert.opened')))).flat();
    for (const event of opened) {
      const carrying = mails.filter((mail) => eventLines(mail).some((line) => line.startsWith(`${event.occurredAt}  ${event.deviceId}`)));
      expect({ deviceId: event.deviceId, mails: carrying.length }).toEqual({ deviceId: event.deviceId, mails: 1 });
      expect(carrying[0].text.split(event.deviceId)).toHaveLength(2);
    }
    expect(mails.flatMap(eventLines)).toHaveLength(gateways.length);
    for (const mail of mails) {
      const count = eventLines(mail).length;
      expect(mail.subject).toEqual(count === 1 ? expect.stringContaining('alert opened') : `Device Cloud: ${count} notifications about your devices`);
    }
  }, 150_000);

  it('PATCH /api/v1/users/me {alertEmails: false}: shown by GET users/me, and alerts mail nothing until it is turned back on', async () => {
    const owner = await aCustomer(t);
    expect(await alertEmailsOf(t, owner)).toBe(true);
    const quiet = await aGateway(t, owner);

    await setAlertEmails(t, owner, false);

    expect(await alertEmailsOf(t, owner)).toBe(false);
    await sent(t, quiet, [socRecord(Date.now() - 3000, 5)]);
    const [opened] = await eventsOnceThere(t, owner, quiet.deviceId, 'alert.opened');
    await dispatched(t, opened);

    // The marker: alert e-mails on again, another alert; it must be the only mail.
    await setAlertEmails(t, owner, true);
    expect(await alertEmailsOf(t, owner)).toBe(true);
    const marker = await aGateway(t, owner);
    await sent(t, marker, [socRecord(Date.now() - 1000, 5)]);

    const [markerOpened] = await eventsOnceThere(t, owner, marker.deviceId, 'alert.opened');
    const [mail] = await mailsOnceThere(owner);
    expectOneEventMail(mail, owner, markerOpened, [/\bsoc\b/, /opened/]);
    expect(mail.text).not.toContain(quiet.deviceId);
    await mailsSettled(t, owner);
    expect(alertMails(owner)).toHaveLength(1);
  });
});
