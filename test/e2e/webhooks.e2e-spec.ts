import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components } from '@device-cloud/client';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, startTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { fileScanner, fingerprintOf } from '../support/leak-scan.js';
import { createTestDatabase } from '../support/postgres.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';
import { startWebhookReceiver, verifiedPayload, type ReceivedWebhook, type WebhookAnswerer, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * Webhooks end to end: customers register endpoints through the API, the real flows (claim,
 * release) record events, and local receivers on 127.0.0.1 verify every delivery with the
 * `standardwebhooks` library. Retries, the failed-deliveries list, disabling, the server-side
 * request forgery guards and two instances on one database are driven the same way.
 */

type CreatedWebhook = components['schemas']['CreatedWebhookResponse'];
type EventType = NonNullable<components['schemas']['CreateWebhookRequest']['types']>[number];
type EventItem = components['schemas']['DeviceEventResponse'];
type Delivery = components['schemas']['DeliveryResponse'];

const RETRY_LIMIT = 3;
/** Retries every second, at most RETRY_LIMIT times: a delivery that never succeeds is listed failed within seconds. */
const FAST_RETRIES = { DELIVERY_RETRY_DELAY_SEC: '1', DELIVERY_RETRY_DELAY_MAX_SEC: '1', DELIVERY_RETRY_LIMIT: String(RETRY_LIMIT), JOB_POLL_INTERVAL_MS: '500' };
const DISABLE_AFTER_SEC = 10;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
/** The sign-up mail every customer of the fixtures gets too. */
const VERIFICATION_SUBJECT = 'Confirm your e-mail address';
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every signing secret the service handed out in this file: each may appear in its creation answer only. */
const issuedSecrets: string[] = [];
const receivers: WebhookReceiver[] = [];

async function aReceiver(answer?: WebhookAnswerer): Promise<WebhookReceiver> {
  const receiver = await startWebhookReceiver(answer);
  receivers.push(receiver);
  return receiver;
}

function createWebhook(t: TestApp, who: SignedIn | undefined, url: string, types?: EventType[]) {
  return t.api.POST('/api/v1/user/webhooks', { body: types === undefined ? { url } : { url, types }, headers: who?.headers });
}

/** Registers `receiver`'s `path` (plus `query`) for `who`; the receiver verifies what arrives there with the new secret. */
async function registered(t: TestApp, who: SignedIn, receiver: WebhookReceiver, path: string, options: { types?: EventType[]; query?: string } = {}): Promise<CreatedWebhook> {
  const { data, response } = await createWebhook(t, who, `${receiver.origin}${path}${options.query ?? ''}`, options.types);
  expect(response.status).toBe(201);
  issuedSecrets.push(data!.secret);
  receiver.trust(path, data!.secret);
  return data!;
}

function listWebhooks(t: TestApp, who: SignedIn | undefined) {
  return t.api.GET('/api/v1/user/webhooks', { headers: who?.headers });
}

function deleteWebhook(t: TestApp, who: SignedIn | undefined, webhookId: string) {
  return t.api.DELETE('/api/v1/user/webhooks/{webhookId}', { params: { path: { webhookId } }, headers: who?.headers });
}

function testWebhook(t: TestApp, who: SignedIn | undefined, webhookId: string) {
  return t.api.POST('/api/v1/user/webhooks/{webhookId}/test', { params: { path: { webhookId } }, headers: who?.headers });
}

async function released(t: TestApp, who: SignedIn, deviceId: string): Promise<void> {
  const { response } = await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId } }, headers: who.headers });
  expect(response.status).toBe(204);
}

async function claimed(t: TestApp, who: SignedIn, device: { deviceId: string; claimCode?: string }): Promise<void> {
  const { response } = await claim(t, who, { deviceId: device.deviceId, claimCode: device.claimCode! });
  expect(response.status).toBe(200);
}

/**
 * Waits until every event has been handed to the channels and every webhook delivery has ended,
 * delivered or given up: from then on, what a receiver has not got it never will.
 */
async function deliveriesSettled(t: TestApp, timeoutMs = 20_000): Promise<void> {
  await eventually(async () => {
    const { rows } = await t.db.query<{ pending: number }>(
      "SELECT count(*)::int AS pending FROM pgboss.job WHERE name IN ('events.dispatch', 'webhook.deliver') AND state IN ('created', 'retry', 'active')",
    );
    expect(rows[0].pending).toBe(0);
  }, timeoutMs);
}

/** The device's events as an administrator sees them, oldest first. */
async function eventsOf(t: TestApp, admin: SignedIn, deviceId: string): Promise<EventItem[]> {
  const { data, response } = await t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId, limit: 200 } }, headers: admin.headers });
  expect(response.status).toBe(200);
  return [...data!.items].reverse();
}

async function failedDeliveries(t: TestApp, admin: SignedIn): Promise<Delivery[]> {
  const { data, response } = await t.api.GET('/api/v1/admin/deliveries', { params: { query: { state: 'failed', limit: 200 } }, headers: admin.headers });
  expect(response.status).toBe(200);
  return data!.items;
}

/** The one failed delivery to `target`, once it is listed. */
async function failedDeliveryTo(t: TestApp, admin: SignedIn, target: string): Promise<Delivery> {
  return eventually(async () => {
    const items = (await failedDeliveries(t, admin)).filter((item) => item.target === target);
    expect(items).toHaveLength(1);
    return items[0];
  }, 20_000);
}

/** What a webhook must receive for an event: the Standard Webhooks body, and the event id as webhook-id. */
function deliveryOf(event: EventItem) {
  return { webhookId: event.id, payload: { type: event.type, timestamp: event.occurredAt, data: { id: event.id, type: event.type, occurredAt: event.occurredAt, deviceId: event.deviceId, data: event.data } } };
}

/** What arrived, as webhook-id and the body the verifier accepted under `secret`; in event order. */
function received(requests: ReceivedWebhook[], secret: string) {
  return requests
    .map((request) => {
      expect(request.verification).toBe('verified');
      return { webhookId: String(request.headers['webhook-id']), payload: verifiedPayload(secret, request) as ReturnType<typeof deliveryOf>['payload'] };
    })
    .sort((a, b) => Number(a.webhookId.slice(4)) - Number(b.webhookId.slice(4)));
}

const aboutDevice = (deviceId: string) => (request: ReceivedWebhook) => (JSON.parse(request.body) as { data?: { deviceId?: string } }).data?.deviceId === deviceId;

/** The secret appears in exactly one answer (the one that created it) and in no log line. */
function expectShownOnlyOnCreation(secret: string): void {
  const marks = [secret.slice('whsec_'.length), fingerprintOf(secret)].filter((mark): mark is string => mark !== undefined);
  const carrying = (texts: string[]) => texts.filter((text) => marks.some((mark) => text.includes(mark)));
  expect(carrying(fileScanner.texts('log'))).toEqual([]);
  expect(carrying(fileScanner.texts('response'))).toEqual([expect.stringContaining('"webhookId"')]);
}

/** JWT and hashing keys shared by instances that serve the same database (the secret box derives from SECRET_PEPPER). */
function sharedSecrets(): Record<string, string> {
  const key = () => randomBytes(32).toString('base64url');
  return { DEVICE_JWT_SECRET: key(), CUSTOMER_JWT_SECRET: key(), SECRET_PEPPER: key() };
}

afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
  // Every app is closed: the log lines of shutdown are in too.
  for (const secret of issuedSecrets) expectShownOnlyOnCreation(secret);
});

describe('webhooks, with private targets allowed (development and tests)', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let admin: SignedIn;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ ...ADMIN_SETTINGS, ...FAST_RETRIES, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_DISABLE_AFTER_SEC: String(DISABLE_AFTER_SEC), SMTP_URL: sink.url });
    admin = await anAdmin(t);
    receiver = await aReceiver();
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  describe('the /api/v1/user/webhooks contract', () => {
    it('POST answers 201 with the secret, shown only there; GET lists without secrets; the stored secret is sealed', async () => {
      const owner = await aCustomer(t);
      const url = `${receiver.origin}/contract?token=receiver-token`;
      const before = Date.now();

      const { data, response } = await createWebhook(t, owner, url, ['device.released', 'device.claimed', 'device.released']);
      const after = Date.now();

      expect(response.status).toBe(201);
      expect(response.headers.get('cache-control')).toContain('no-store');
      const created = data!;
      issuedSecrets.push(created.secret);
      expect(created).toEqual({ webhookId: expect.stringMatching(UUID), url, types: ['device.claimed', 'device.released'], enabled: true, createdAt: expect.stringMatching(ISO_INSTANT), secret: expect.stringMatching(SECRET) });
      expect(Date.parse(created.createdAt)).toBeGreaterThanOrEqual(before - 5);
      expect(Date.parse(created.createdAt)).toBeLessThanOrEqual(after + 5);
      expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

      const { secret, ...shown } = created;
      const listed = await listWebhooks(t, owner);
      expect({ status: listed.response.status, body: listed.data }).toEqual({ status: 200, body: { items: [shown] } });

      const { rows } = await t.db.query<{ user_id: string; url: string; types: string[]; enabled: boolean; secret_sealed: string }>(
        'SELECT user_id, url, types, enabled, secret_sealed FROM webhooks WHERE webhook_id = $1',
        [created.webhookId],
      );
      expect(rows).toEqual([{ user_id: owner.userId, url, types: ['device.claimed', 'device.released'], enabled: true, secret_sealed: expect.stringMatching(/^v1\./) }]);
      expect(rows[0].secret_sealed).not.toContain(secret.slice('whsec_'.length));

      const second = await createWebhook(t, owner, `${receiver.origin}/contract-2`);
      expect(second.response.status).toBe(201);
      issuedSecrets.push(second.data!.secret);
      expect(second.data!.types).toBeNull();
      expect(second.data!.secret).not.toBe(secret);
      const { secret: secondSecret, ...secondShown } = second.data!;
      expect((await listWebhooks(t, owner)).data).toEqual({ items: [shown, secondShown] });
      for (const each of [secret, secondSecret]) expectShownOnlyOnCreation(each);
    });

    it('POST .../test answers 202 with a message id, and the receiver gets a webhook.test message under that webhook-id, signed with the secret', async () => {
      const owner = await aCustomer(t);
      const created = await registered(t, owner, receiver, '/test-message', { query: '?token=receiver-token' });
      const before = Date.now();

      const { data, response } = await testWebhook(t, owner, created.webhookId);

      expect(response.status).toBe(202);
      expect(data).toEqual({ messageId: expect.stringMatching(/^msg_[0-9a-f]{32}$/) });
      const [message] = await eventually(() => {
        const got = receiver.requestsTo('/test-message');
        expect(got).toHaveLength(1);
        return got;
      });
      expect(message).toEqual(expect.objectContaining({ path: '/test-message?token=receiver-token', verification: 'verified', status: 200 }));
      expect(message.headers).toEqual(expect.objectContaining({ 'content-type': 'application/json', 'webhook-id': data!.messageId, 'webhook-timestamp': expect.stringMatching(/^\d{10}$/) }));
      expect(Number(message.headers['webhook-timestamp']) * 1000).toBeGreaterThanOrEqual(before - 1000);
      const payload = verifiedPayload(created.secret, message) as { timestamp: string };
      expect(payload).toEqual({ type: 'webhook.test', timestamp: expect.stringMatching(ISO_INSTANT), data: { webhookId: created.webhookId } });
      expect(Date.parse(payload.timestamp)).toBeGreaterThanOrEqual(before - 5);
      expect(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(message.body, message.headers as Record<string, string>)).toThrow(WebhookVerificationError);
      await deliveriesSettled(t);
      expect(receiver.requestsTo('/test-message')).toHaveLength(1);
    });

    it('at most 10 per account: the 11th is 409 TOO_MANY_WEBHOOKS and stores nothing; after a DELETE (204) one more fits', async () => {
      const owner = await aCustomer(t);
      const ten: CreatedWebhook[] = [];
      for (let i = 0; i < 10; i++) ten.push(await registered(t, owner, receiver, `/many-${i}`));

      const eleventh = await createWebhook(t, owner, `${receiver.origin}/many-10`);

      expectProblem(eleventh, 409, 'TOO_MANY_WEBHOOKS');
      const listed = (await listWebhooks(t, owner)).data!.items;
      expect(listed.map((item) => item.webhookId)).toEqual(ten.map((each) => each.webhookId));
      for (const item of listed) expect(item).not.toHaveProperty('secret');
      const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhooks WHERE user_id = $1', [owner.userId]);
      expect(rows[0].n).toBe(10);
      // The limit is per account.
      const others = await registered(t, await aCustomer(t), receiver, '/many-other');
      expect(others.enabled).toBe(true);

      const deleted = await deleteWebhook(t, owner, ten[3].webhookId);

      expect(deleted.response.status).toBe(204);
      expect((await listWebhooks(t, owner)).data!.items.map((item) => item.webhookId)).toEqual(ten.filter((_, i) => i !== 3).map((each) => each.webhookId));
      await registered(t, owner, receiver, '/many-10');
      expectProblem(await createWebhook(t, owner, `${receiver.origin}/many-11`), 409, 'TOO_MANY_WEBHOOKS');
      expect((await listWebhooks(t, owner)).data!.items).toHaveLength(10);
    });

    it('another customer cannot delete or test a webhook (404, nothing changes); a deleted one is 404 for its owner too', async () => {
      const [owner, other] = [await aCustomer(t), await aCustomer(t)];
      const created = await registered(t, owner, receiver, '/not-yours');
      const { secret: _secret, ...shown } = created;

      expectProblem(await deleteWebhook(t, other, created.webhookId), 404, 'NOT_FOUND');
      expectProblem(await testWebhook(t, other, created.webhookId), 404, 'NOT_FOUND');
      expect((await listWebhooks(t, other)).data).toEqual({ items: [] });
      expect((await listWebhooks(t, owner)).data).toEqual({ items: [shown] });

      expect((await deleteWebhook(t, owner, created.webhookId)).response.status).toBe(204);

      expect((await listWebhooks(t, owner)).data).toEqual({ items: [] });
      expectProblem(await deleteWebhook(t, owner, created.webhookId), 404, 'NOT_FOUND');
      expectProblem(await testWebhook(t, owner, created.webhookId), 404, 'NOT_FOUND');
      const { rows } = await t.db.query('SELECT 1 FROM webhooks WHERE webhook_id = $1', [created.webhookId]);
      expect(rows).toEqual([]);
      await deliveriesSettled(t);
      expect(receiver.requestsTo('/not-yours')).toEqual([]);
    });

    it('refuses requests without a customer token (401), bodies that are not a webhook (400) and ids that are not UUIDs (400)', async () => {
      const owner = await aCustomer(t);
      expectProblem(await createWebhook(t, undefined, `${receiver.origin}/anonymous`), 401, 'UNAUTHORIZED');
      expectProblem(await listWebhooks(t, undefined), 401, 'UNAUTHORIZED');
      expect(fieldsOf(expectProblem(await createWebhook(t, owner, `${receiver.origin}/x`, ['device.exploded' as EventType]), 400, 'VALIDATION_FAILED'))).toEqual(['types']);
      expect(fieldsOf(expectProblem(await createWebhook(t, owner, `${receiver.origin}/x`, []), 400, 'VALIDATION_FAILED'))).toEqual(['types']);
      expect(fieldsOf(expectProblem(await createWebhook(t, owner, 'not a url'), 400, 'WEBHOOK_URL_NOT_ALLOWED'))).toEqual(['url']);
      expect(fieldsOf(expectProblem(await deleteWebhook(t, owner, 'not-a-uuid'), 400, 'VALIDATION_FAILED'))).toEqual(['webhookId']);
      expect((await listWebhooks(t, owner)).data).toEqual({ items: [] });
    });
  });

  describe('deliveries', () => {
    it('each webhook gets, signed, the events of the devices its owner had when they happened, only the types it takes; another customer none of them; an administrator all', async () => {
      const [owner, stranger] = [await aCustomer(t), await aCustomer(t)];
      const everything = await registered(t, owner, receiver, '/owner-all');
      const releasesOnly = await registered(t, owner, receiver, '/owner-released', { types: ['device.released'] });
      const strangers = await registered(t, stranger, receiver, '/stranger');
      const admins = await registered(t, admin, receiver, '/admin');
      const { body } = await aRegisteredDevice(t);
      const deviceId = body.deviceId;
      const before = Date.now();

      await claimed(t, owner, body);
      await released(t, owner, deviceId);
      await claimed(t, stranger, body);
      await deliveriesSettled(t);

      const events = await eventsOf(t, admin, deviceId);
      expect(events.map((event) => event.type)).toEqual(['device.claimed', 'device.released', 'device.claimed']);
      const [claimedByOwner, releasedByOwner, claimedByStranger] = events;
      expect(received(receiver.requestsTo('/owner-all'), everything.secret)).toEqual([deliveryOf(claimedByOwner), deliveryOf(releasedByOwner)]);
      expect(received(receiver.requestsTo('/owner-released'), releasesOnly.secret)).toEqual([deliveryOf(releasedByOwner)]);
      // The stranger's webhook works: it gets the claim that made the stranger the owner, nothing from before.
      expect(received(receiver.requestsTo('/stranger'), strangers.secret)).toEqual([deliveryOf(claimedByStranger)]);
      expect(received(receiver.requestsTo('/admin').filter(aboutDevice(deviceId)), admins.secret)).toEqual(events.map(deliveryOf));

      for (const request of receiver.requests.filter(aboutDevice(deviceId))) {
        expect(request.status).toBe(200);
        expect(request.headers['content-type']).toBe('application/json');
        expect(Number(request.headers['webhook-timestamp']) * 1000).toBeGreaterThanOrEqual(before - 1000);
        expect(Number(request.headers['webhook-timestamp']) * 1000).toBeLessThanOrEqual(Date.now());
      }
      // Each is signed with its own webhook's secret: another webhook's does not verify it.
      const [forOwner] = receiver.requestsTo('/owner-all');
      expect(() => verifiedPayload(strangers.secret, forOwner)).toThrow(WebhookVerificationError);
      expect(() => verifiedPayload(everything.secret, { ...forOwner, body: forOwner.body.replace(deviceId, `${deviceId}-forged`) })).toThrow(WebhookVerificationError);

      // Deleted: the administrator's webhook gets nothing more.
      expect((await deleteWebhook(t, admin, admins.webhookId)).response.status).toBe(204);
      const adminsBefore = receiver.requestsTo('/admin').length;
      await released(t, stranger, deviceId);
      await deliveriesSettled(t);
      expect(receiver.requestsTo('/admin')).toHaveLength(adminsBefore);
      expect(received(receiver.requestsTo('/stranger'), strangers.secret).map((each) => each.payload.type)).toEqual(['device.claimed', 'device.released']);
    }, 120_000);

    it('an answer of 500 is retried with the same webhook-id and body; once answered 200 the event is not sent again; the failed attempt is on record until then', async () => {
      let answerSecond!: () => void;
      const secondMayAnswer = new Promise<void>((resolve) => (answerSecond = resolve));
      const flaky = await aReceiver(async (_request, nth) => {
        if (nth === 1) return 500;
        if (nth === 2) await secondMayAnswer;
        return 200;
      });
      const owner = await aCustomer(t);
      const created = await registered(t, owner, flaky, '/flaky');

      const { body } = await aClaimedDevice(t, owner);

      const [first, second] = await eventually(() => {
        expect(flaky.requests).toHaveLength(2);
        return flaky.requests;
      });
      // The retry is waiting for its answer: the 500 shows on the webhook and on the delivery job.
      const webhookRow = async () =>
        (await t.db.query<{ enabled: boolean; failing_since: Date | null }>('SELECT enabled, failing_since FROM webhooks WHERE webhook_id = $1', [created.webhookId])).rows[0];
      const deliveryJobs = async () =>
        (
          await t.db.query<{ state: string; retry_count: number; output: unknown }>("SELECT state, retry_count, output FROM pgboss.job WHERE name = 'webhook.deliver' AND data->>'webhookId' = $1", [
            created.webhookId,
          ])
        ).rows;
      expect(await webhookRow()).toEqual({ enabled: true, failing_since: expect.any(Date) });
      expect(await deliveryJobs()).toEqual([expect.objectContaining({ state: 'active', retry_count: 1, output: expect.objectContaining({ code: 'HTTP_500' }) })]);

      answerSecond();
      await deliveriesSettled(t);

      const [event] = await eventsOf(t, admin, body.deviceId);
      expect(event.type).toBe('device.claimed');
      expect(flaky.requests).toHaveLength(2);
      expect([first.status, second.status]).toEqual([500, 200]);
      expect(first.headers['webhook-id']).toBe(event.id);
      expect(second.headers['webhook-id']).toBe(event.id);
      expect(second.body).toBe(first.body);
      expect(received([first, second], created.secret)).toEqual([deliveryOf(event), deliveryOf(event)]);
      expect(await deliveryJobs()).toEqual([expect.objectContaining({ state: 'completed', retry_count: 1 })]);
      expect(await webhookRow()).toEqual({ enabled: true, failing_since: null });
      expect((await failedDeliveries(t, admin)).filter((item) => item.target.startsWith(flaky.origin))).toEqual([]);
    });

    it('a receiver that always answers 500: listed failed after the last retry (target without query, attempts, HTTP_500); after WEBHOOK_DISABLE_AFTER_SEC of failures disabled and its owner mailed', async () => {
      const down = await aReceiver(() => 500);
      const owner = await aCustomer(t);
      const created = await registered(t, owner, down, '/down', { query: '?token=receiver-token' });

      const { body } = await aClaimedDevice(t, owner);

      const item = await failedDeliveryTo(t, admin, `${down.origin}/down`);
      const [event] = await eventsOf(t, admin, body.deviceId);
      expect(item).toEqual({
        deliveryId: expect.stringMatching(UUID),
        channel: 'webhook',
        kind: 'webhook.deliver',
        target: `${down.origin}/down`,
        attempts: RETRY_LIMIT + 1,
        lastErrorCode: 'HTTP_500',
        createdAt: expect.stringMatching(ISO_INSTANT),
        failedAt: expect.stringMatching(ISO_INSTANT),
      });
      expect(Date.parse(item.failedAt)).toBeGreaterThan(Date.parse(item.createdAt));
      expect(down.requests.map((request) => [request.headers['webhook-id'], request.verification, request.status])).toEqual(Array(RETRY_LIMIT + 1).fill([event.id, 'verified', 500]));
      expect((await listWebhooks(t, owner)).data!.items.map((each) => each.enabled)).toEqual([true]);

      // WEBHOOK_DISABLE_AFTER_SEC later on the service's clock, the failure of a test message disables it.
      // The clock goes back after: tokens signed later would otherwise come from the future.
      t.clock.advanceMs(DISABLE_AFTER_SEC * 1000);
      try {
        expect((await testWebhook(t, owner, created.webhookId)).response.status).toBe(202);
        await eventually(async () => expect((await listWebhooks(t, owner)).data!.items.map((each) => each.enabled)).toEqual([false]));
      } finally {
        t.clock.reset();
      }

      const { rows } = await t.db.query<{ failing_since: Date; disabled_at: Date }>('SELECT failing_since, disabled_at FROM webhooks WHERE webhook_id = $1', [created.webhookId]);
      expect(rows[0].disabled_at.getTime() - rows[0].failing_since.getTime()).toBeGreaterThanOrEqual(DISABLE_AFTER_SEC * 1000);
      const disabledMails = () => sink.messagesTo(owner.email).filter((each) => each.subject !== VERIFICATION_SUBJECT);
      const [mail] = await eventually(() => {
        expect(disabledMails()).toHaveLength(1);
        return disabledMails();
      });
      expect(mail.subject).toBe('Device Cloud: a webhook of yours was disabled');
      expect(mail.text).toContain(created.webhookId);
      expect(mail.text).toContain(down.origin);
      expect(mail.text).not.toContain('receiver-token');

      // Disabled: what was queued and what comes later is not sent; the owner is mailed once.
      await deliveriesSettled(t);
      const sent = down.requests.length;
      await aClaimedDevice(t, owner);
      expectProblem(await testWebhook(t, owner, created.webhookId), 409, 'WEBHOOK_DISABLED');
      await deliveriesSettled(t);
      expect(down.requests).toHaveLength(sent);
      await eventually(async () => {
        const { rows: pending } = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'mail.webhook-disabled' AND state IN ('created', 'retry', 'active')");
        expect(pending[0].n).toBe(0);
      });
      expect(disabledMails()).toHaveLength(1);
    }, 120_000);

    it('a redirect is not followed: the server it points to gets nothing and the delivery fails with REDIRECT_NOT_FOLLOWED', async () => {
      const elsewhere = await aReceiver();
      const redirecting = await aReceiver(() => ({ status: 302, headers: { location: `${elsewhere.origin}/internal` } }));
      const owner = await aCustomer(t);
      await registered(t, owner, redirecting, '/moved');

      await aClaimedDevice(t, owner);

      const item = await failedDeliveryTo(t, admin, `${redirecting.origin}/moved`);
      expect(item).toEqual(expect.objectContaining({ channel: 'webhook', attempts: RETRY_LIMIT + 1, lastErrorCode: 'REDIRECT_NOT_FOLLOWED' }));
      expect(redirecting.requests.map((request) => [request.verification, request.status])).toEqual(Array(RETRY_LIMIT + 1).fill(['verified', 302]));
      expect(elsewhere.connections()).toBe(0);
    });
  });
});

describe('webhooks, with private targets refused (the production setting)', () => {
  let t: TestApp;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, ...FAST_RETRIES, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each([
    ['plain http', 'http://hooks.example.com/device-cloud'],
    ['loopback', 'https://127.0.0.1/'],
    ['a private address', 'https://10.1.2.3/'],
    ['the link-local cloud metadata address', 'https://169.254.169.254/latest/meta-data'],
    ['IPv6 loopback', 'https://[::1]/'],
  ])('refuses %s at registration: 400 WEBHOOK_URL_NOT_ALLOWED naming url, nothing stored', async (_name, url) => {
    const owner = await aCustomer(t);

    const problem = expectProblem(await createWebhook(t, owner, url), 400, 'WEBHOOK_URL_NOT_ALLOWED');

    expect(fieldsOf(problem)).toEqual(['url']);
    expect((await listWebhooks(t, owner)).data).toEqual({ items: [] });
    const { rows } = await t.db.query('SELECT 1 FROM webhooks WHERE user_id = $1', [owner.userId]);
    expect(rows).toEqual([]);
  });

  it('accepts a host name that resolves to loopback, but no delivery reaches it: each fails with PRIVATE_ADDRESS', async () => {
    const local = await aReceiver();
    const owner = await aCustomer(t);
    const url = `https://localhost:${local.port}/hook`;
    const { data, response } = await createWebhook(t, owner, url);
    expect(response.status).toBe(201);
    issuedSecrets.push(data!.secret);
    expect(data!.url).toBe(url);

    const { body } = await aClaimedDevice(t, owner);
    expect((await testWebhook(t, owner, data!.webhookId)).response.status).toBe(202);

    const items = await eventually(async () => {
      const listed = (await failedDeliveries(t, admin)).filter((item) => item.target === url);
      expect(listed).toHaveLength(2);
      return listed;
    }, 20_000);
    for (const item of items) expect(item).toEqual(expect.objectContaining({ channel: 'webhook', kind: 'webhook.deliver', attempts: RETRY_LIMIT + 1, lastErrorCode: 'PRIVATE_ADDRESS' }));
    await deliveriesSettled(t);
    expect(local.connections()).toBe(0);
    expect((await eventsOf(t, admin, body.deviceId)).map((event) => event.type)).toEqual(['device.claimed']);
  });
});

describe('webhooks, two instances on one database', () => {
  it('deliver each event once per webhook, whichever instance recorded it', async () => {
    const database = await createTestDatabase();
    const settings = { ...sharedSecrets(), ...FAST_RETRIES, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', ...ADMIN_SETTINGS };
    const a = await startTestApp(database.url, settings);
    const b = await startTestApp(database.url, settings);
    try {
      // A receiver that takes a moment to answer, so both instances' workers are busy at once.
      const slow = await aReceiver(() => pause(30).then(() => 200));
      const owner = await aCustomer(a);
      const first = await registered(a, owner, slow, '/first');
      const second = await registered(b, owner, slow, '/second', { types: ['device.released'] });
      const devices = await Promise.all(Array.from({ length: 6 }, (_, i) => aRegisteredDevice(i % 2 === 0 ? a : b)));

      await Promise.all(devices.map(({ body }, i) => claimed(i % 2 === 0 ? a : b, owner, body)));
      await Promise.all(devices.map(({ body }, i) => released(i % 2 === 0 ? b : a, owner, body.deviceId)));
      await deliveriesSettled(a);

      const admin = await anAdmin(b);
      const events = (await Promise.all(devices.map(({ body }) => eventsOf(b, admin, body.deviceId)))).flat();
      expect(events.map((event) => event.type).sort()).toEqual([...Array<string>(6).fill('device.claimed'), ...Array<string>(6).fill('device.released')]);
      const inEventOrder = (list: EventItem[]) => [...list].sort((x, y) => Number(x.id.slice(4)) - Number(y.id.slice(4)));
      expect(received(slow.requestsTo('/first'), first.secret)).toEqual(inEventOrder(events).map(deliveryOf));
      expect(received(slow.requestsTo('/second'), second.secret)).toEqual(inEventOrder(events.filter((event) => event.type === 'device.released')).map(deliveryOf));
      const { rows } = await a.db.query<{ state: string; n: number }>("SELECT state, count(*)::int AS n FROM pgboss.job WHERE name = 'webhook.deliver' GROUP BY state");
      expect(rows).toEqual([{ state: 'completed', n: 18 }]);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  }, 180_000);
});
