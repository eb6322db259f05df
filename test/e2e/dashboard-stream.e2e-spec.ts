import net from 'node:net';
import { ADMIN_SETTINGS, CUSTOMER_PASSWORD, aClaimedDevice, aCustomer, anAdmin, claim, aRegisteredDevice, type SignedIn } from '../support/claim-fixtures.js';
import { StreamsService } from '../../src/modules/stream/index.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { dataOf, openSse, type SseMessage, type SseStream } from '../support/sse.js';
import { ingest, ingestAll, iso, type TelemetryRecordBody } from '../support/telemetry.js';

/*
 * GET /api/v1/dashboard/stream (Server-Sent Events): who may open it (bearer token or single-use
 * ticket), what each viewer sees, resuming with Last-Event-ID, and its bounds (streams per account,
 * a client that stops reading). Across instances: dashboard-stream-instances; shutdown:
 * dashboard-stream-shutdown.
 */


interface Gateway {
  deviceId: string;
  accessToken: string;
}

type TelemetryData = { deviceId: string; batteryId: string; ts: string; metrics: Record<string, number> };
type EventData = { id: string; type: string; deviceId: string; occurredAt: string; data: Record<string, unknown> };

const streams: SseStream[] = [];

async function stream(t: TestApp, query: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<SseStream> {
  const url = new URL('/api/v1/dashboard/stream', t.baseUrl);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  const opened = await openSse(url.toString(), headers);
  streams.push(opened);
  return opened;
}

const asOwner = (who: SignedIn) => ({ authorization: `Bearer ${who.accessToken}` });

async function aGateway(t: TestApp, owner: SignedIn): Promise<Gateway> {
  const device = await aClaimedDevice(t, owner);
  return { deviceId: device.body.deviceId, accessToken: device.registered.accessToken };
}

let clock = Date.now() - 86_400_000;
/** A record with a unique timestamp and a soc that identifies it. */
function aRecord(soc: number, extra: Record<string, number> = {}): TelemetryRecordBody {
  clock += 1000;
  return { ts: iso(clock), metrics: { soc, voltage: 13.1, ...extra } };
}

async function send(t: TestApp, gateway: Gateway, records: TelemetryRecordBody[]): Promise<void> {
  const { response } = await ingest(t.api, gateway.accessToken, records);
  expect(response.status).toBe(200);
}

const telemetryOf = (deviceId: string, soc?: number) => (message: SseMessage) =>
  message.event === 'telemetry' && dataOf<TelemetryData>(message).deviceId === deviceId && (soc === undefined || dataOf<TelemetryData>(message).metrics.soc === soc);
const eventOf = (type: string, deviceId: string) => (message: SseMessage) => message.event === type && dataOf<EventData>(message).deviceId === deviceId;

/** Waits for `count` more heartbeats on `live`: what the server wrote to it before now, it has read. */
async function heartbeatsFromNow(live: SseStream, count = 2): Promise<void> {
  const seen = live.comments.length;
  await eventually(() => expect(live.comments.length).toBeGreaterThanOrEqual(seen + count), 5000);
}

async function aTicket(t: TestApp, who: SignedIn): Promise<string> {
  const { data, response } = await t.api.POST('/api/v1/dashboard/stream/tickets', { headers: who.headers });
  expect(response.status).toBe(201);
  return data!.ticket;
}

afterEach(() => {
  for (const opened of streams.splice(0)) opened.close();
});

describe('the dashboard stream', () => {
  let t: TestApp;
  let alice: SignedIn;
  let bob: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, STREAM_HEARTBEAT_MS: '300' });
    alice = await aCustomer(t);
    bob = await aCustomer(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('with a bearer token', () => {
    it('answers text/event-stream, not cached, and pushes each stored record of the viewer’s device with its metrics', async () => {
      const gateway = await aGateway(t, alice);
      const live = await stream(t, {}, asOwner(alice));
      expect(live.status).toBe(200);
      expect(live.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(live.headers['cache-control']).toBe('no-store');
      // The stream writes its own head: the headers every answer gets from the hooks are on it too.
      expect(live.headers['x-request-id']).toMatch(/\S/);
      expect(live.headers['x-content-type-options']).toBe('nosniff');
      // It lasts as long as its connection: no chunked framing around every frame.
      expect(live.headers.connection).toBe('close');
      expect(live.headers['transfer-encoding']).toBeUndefined();

      const records = [aRecord(71.5, { temperature: 22.25 }), aRecord(71.25)];
      records[1].batteryId = 'aux';
      const sentAt = performance.now();
      await send(t, gateway, records);
      const first = await live.next(telemetryOf(gateway.deviceId, 71.5), 2000);
      const second = await live.next(telemetryOf(gateway.deviceId, 71.25), 2000);
      expect(first.at - sentAt).toBeLessThan(1000);
      expect(first.id).toBeNull();
      expect(dataOf(first)).toEqual({ deviceId: gateway.deviceId, batteryId: 'main', ts: records[0].ts, metrics: { soc: 71.5, voltage: 13.1, temperature: 22.25 } });
      expect(dataOf(second)).toEqual({ deviceId: gateway.deviceId, batteryId: 'aux', ts: records[1].ts, metrics: { soc: 71.25, voltage: 13.1 } });
    });

    it('pushes events of the log with the log’s id, as GET /dashboard/events lists them', async () => {
      const live = await stream(t, {}, asOwner(alice));
      const device = await aRegisteredDevice(t);
      expect((await claim(t, alice, { deviceId: device.body.deviceId, claimCode: device.body.claimCode })).response.status).toBe(200);

      const claimed = await live.next(eventOf('device.claimed', device.body.deviceId), 2000);
      const { data: listed } = await t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId: device.body.deviceId } }, headers: alice.headers });
      expect(listed!.items).toHaveLength(1);
      expect(claimed.id).toBe(listed!.items[0].id);
      expect(dataOf(claimed)).toEqual(listed!.items[0]);
    });

    it('sends a comment heartbeat on an idle stream', async () => {
      const live = await stream(t, {}, asOwner(bob));
      await eventually(() => expect(live.comments.filter((comment) => comment === 'heartbeat').length).toBeGreaterThanOrEqual(2), 3000);
    });

    it('refuses a request without credentials, with a bad token, or with a malformed Last-Event-ID, as problem documents', async () => {
      const anonymous = await stream(t);
      expect(anonymous.status).toBe(401);
      expect(JSON.parse(anonymous.body)).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
      const forged = await stream(t, {}, { authorization: 'Bearer not-a-token' });
      expect(forged.status).toBe(401);
      for (const lastEventId of ['42', 'evt_0', 'evt_abc', 'evt_99999999999999999999']) {
        const bad = await stream(t, { lastEventId }, asOwner(alice));
        expect(bad.status).toBe(400);
        expect(JSON.parse(bad.body)).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ field: 'lastEventId' }] });
      }
      const badHeader = await stream(t, {}, { ...asOwner(alice), 'last-event-id': 'yesterday' });
      expect(badHeader.status).toBe(400);
      const badDevice = await stream(t, { deviceId: 'no spaces' }, asOwner(alice));
      expect(badDevice.status).toBe(400);
    });
  });

  describe('with a ticket', () => {
    it('a ticket is random, 60 s, stored only as a hash, not cacheable, and opens one stream', async () => {
      const { data, response } = await t.api.POST('/api/v1/dashboard/stream/tickets', { headers: alice.headers });
      expect(response.status).toBe(201);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(data!.expiresIn).toBe(60);
      expect(data!.ticket).toMatch(/^st_[A-Za-z0-9_-]{43}$/);
      const { rows } = await t.db.query<{ ticket_hash: string; user_id: string; seconds_left: number }>(
        'SELECT ticket_hash, user_id, extract(epoch FROM expires_at - now())::float8 AS seconds_left FROM stream_tickets WHERE user_id = $1',
        [alice.userId],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0].ticket_hash).not.toContain(data!.ticket.slice(3, 20));
      expect(rows[0].seconds_left).toBeGreaterThan(55);
      expect(rows[0].seconds_left).toBeLessThanOrEqual(61);

      const gateway = await aGateway(t, alice);
      const live = await stream(t, { ticket: data!.ticket });
      expect(live.status).toBe(200);
      await send(t, gateway, [aRecord(55)]);
      await live.next(telemetryOf(gateway.deviceId, 55), 2000);
      expect((await t.db.query('SELECT 1 FROM stream_tickets WHERE user_id = $1', [alice.userId])).rowCount).toBe(0);
    });

    it('refuses a used ticket, an expired one, an unknown one and one whose session logged out: 401, nothing opened', async () => {
      const ticket = await aTicket(t, alice);
      expect((await stream(t, { ticket })).status).toBe(200);
      const reused = await stream(t, { ticket });
      expect(reused.status).toBe(401);
      expect(JSON.parse(reused.body)).toMatchObject({ code: 'UNAUTHORIZED' });

      const expired = await aTicket(t, alice);
      await t.db.query("UPDATE stream_tickets SET expires_at = now() - interval '1 second' WHERE user_id = $1", [alice.userId]);
      expect((await stream(t, { ticket: expired })).status).toBe(401);

      expect((await stream(t, { ticket: `st_${'A'.repeat(43)}` })).status).toBe(401);
      expect((await stream(t, { ticket: 'nonsense' })).status).toBe(401);

      const leaving = await aCustomer(t);
      const { data: session } = await t.api.POST('/api/v1/auth/login', { body: { email: leaving.email, password: CUSTOMER_PASSWORD } });
      const sessionHeaders = { authorization: `Bearer ${session!.accessToken}` };
      const orphan = await aTicket(t, { ...leaving, headers: sessionHeaders });
      expect((await t.api.POST('/api/v1/auth/logout', { body: { refreshToken: session!.refreshToken }, headers: sessionHeaders })).response.status).toBeLessThan(300);
      expect((await stream(t, { ticket: orphan })).status).toBe(401);
      expect((await stream(t, { ticket: await aTicket(t, leaving) })).status).toBe(200);
    });

    it('a ticket is bound to its account: it shows that account’s devices, not another’s', async () => {
      const bobs = await aGateway(t, bob);
      const alices = await aGateway(t, alice);
      const live = await stream(t, { ticket: await aTicket(t, bob) });
      await send(t, alices, [aRecord(11)]);
      await send(t, bobs, [aRecord(22)]);
      await live.next(telemetryOf(bobs.deviceId, 22), 2000);
      expect(live.messages.some(telemetryOf(alices.deviceId))).toBe(false);
    });
  });

  describe('visibility', () => {
    it('each owner sees only their devices, an administrator every device, and ?deviceId= narrows to one', async () => {
      const admin = await anAdmin(t);
      const alices = await aGateway(t, alice);
      const alicesOther = await aGateway(t, alice);
      const bobs = await aGateway(t, bob);
      const aliceAll = await stream(t, {}, asOwner(alice));
      const aliceOne = await stream(t, { deviceId: alicesOther.deviceId }, asOwner(alice));
      const bobAll = await stream(t, {}, asOwner(bob));
      const adminAll = await stream(t, {}, asOwner(admin));
      const adminOne = await stream(t, { deviceId: bobs.deviceId }, asOwner(admin));

      await send(t, alices, [aRecord(1)]);
      await send(t, bobs, [aRecord(2)]);
      await send(t, alicesOther, [aRecord(3)]);

      await aliceAll.next(telemetryOf(alicesOther.deviceId, 3), 2000);
      await aliceOne.next(telemetryOf(alicesOther.deviceId, 3), 2000);
      await bobAll.next(telemetryOf(bobs.deviceId, 2), 2000);
      await adminAll.next(telemetryOf(alicesOther.deviceId, 3), 2000);
      await adminOne.next(telemetryOf(bobs.deviceId, 2), 2000);
      await adminAll.next(telemetryOf(bobs.deviceId, 2), 2000);
      await adminAll.next(telemetryOf(alices.deviceId, 1), 2000);

      expect(aliceAll.messages.some(telemetryOf(alices.deviceId, 1))).toBe(true);
      expect(aliceAll.messages.some(telemetryOf(bobs.deviceId))).toBe(false);
      expect(aliceOne.messages.filter((message) => message.event === 'telemetry').map((message) => dataOf<TelemetryData>(message).deviceId)).toEqual([alicesOther.deviceId]);
      expect(bobAll.messages.some((message) => message.event === 'telemetry' && dataOf<TelemetryData>(message).deviceId !== bobs.deviceId)).toBe(false);
      expect(adminOne.messages.some((message) => message.event === 'telemetry' && dataOf<TelemetryData>(message).deviceId !== bobs.deviceId)).toBe(false);
    });

    it('?deviceId= of another’s device or of none answers 404, the same for both', async () => {
      const bobs = await aGateway(t, bob);
      const others = await stream(t, { deviceId: bobs.deviceId }, asOwner(alice));
      const none = await stream(t, { deviceId: 'gw-does-not-exist' }, asOwner(alice));
      expect(others.status).toBe(404);
      expect(none.status).toBe(404);
      expect(JSON.parse(others.body)).toEqual({ ...JSON.parse(none.body), instance: expect.any(String), requestId: expect.any(String) });
    });

    it('a device the owner releases stops appearing at once, on every stream of theirs', async () => {
      const gateway = await aGateway(t, alice);
      const still = await aGateway(t, alice);
      const all = await stream(t, {}, asOwner(alice));
      const narrowed = await stream(t, { deviceId: gateway.deviceId }, asOwner(alice));
      await send(t, gateway, [aRecord(40)]);
      await all.next(telemetryOf(gateway.deviceId, 40), 2000);
      await narrowed.next(telemetryOf(gateway.deviceId, 40), 2000);

      expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: gateway.deviceId } }, headers: alice.headers })).response.status).toBe(204);
      await all.next(eventOf('device.released', gateway.deviceId), 2000);
      await send(t, gateway, [aRecord(41)]);
      // Frames that come within the coalescing window wait for the hub's next flush: 43 follows 42
      // to `all` no earlier than the flush that would have carried 41 to `narrowed`; a heartbeat
      // written to `narrowed` after that comes behind 41 on its connection.
      await send(t, still, [aRecord(42)]);
      await send(t, still, [aRecord(43)]);
      await all.next(telemetryOf(still.deviceId, 43), 2000);
      await heartbeatsFromNow(narrowed);
      expect(all.messages.some(telemetryOf(gateway.deviceId, 41))).toBe(false);
      expect(narrowed.messages.some(telemetryOf(gateway.deviceId, 41))).toBe(false);
      expect(narrowed.ended).toBe(false);
    });
  });

  describe('resuming with Last-Event-ID', () => {
    it('replays the viewer’s events recorded since, oldest first and once, then goes on live', async () => {
      const first = await stream(t, {}, asOwner(alice));
      const one = await aRegisteredDevice(t);
      await claim(t, alice, { deviceId: one.body.deviceId, claimCode: one.body.claimCode });
      const seen = await first.next(eventOf('device.claimed', one.body.deviceId), 2000);
      first.close();

      // Missed while disconnected: two of Alice's events and one of Bob's.
      const two = await aRegisteredDevice(t);
      await claim(t, alice, { deviceId: two.body.deviceId, claimCode: two.body.claimCode });
      const bobs = await aRegisteredDevice(t);
      await claim(t, bob, { deviceId: bobs.body.deviceId, claimCode: bobs.body.claimCode });
      await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: one.body.deviceId } }, headers: alice.headers });

      const resumes: Array<{ headers: Record<string, string>; query: Record<string, string> }> = [
        { headers: { 'last-event-id': seen.id! }, query: {} },
        { headers: {}, query: { lastEventId: seen.id! } },
      ];
      for (const resume of resumes) {
        const again = await stream(t, resume.query, { ...asOwner(alice), ...resume.headers });
        const released = await again.next(eventOf('device.released', one.body.deviceId), 2000);
        // After these two, the second resume also replays the claim the first one saw live below.
        const replayed = again.messages.filter((message) => message.id !== null).slice(0, 2);
        expect(replayed.map((message) => [message.event, dataOf<EventData>(message).deviceId])).toEqual([
          ['device.claimed', two.body.deviceId],
          ['device.released', one.body.deviceId],
        ]);
        expect(replayed.every((message) => BigInt(message.id!.slice(4)) > BigInt(seen.id!.slice(4)))).toBe(true);
        expect(released).toBe(replayed[1]);

        const gateway = await aGateway(t, alice);
        await again.next(eventOf('device.claimed', gateway.deviceId), 2000);
        again.close();
      }
    });

    it('an administrator’s resume replays every device’s events; ?deviceId= narrows the replay too', async () => {
      const admin = await anAdmin(t);
      const { data } = await t.api.GET('/api/v1/dashboard/events', { params: { query: { limit: 1 } }, headers: admin.headers });
      const mark = data!.items[0].id;
      const alices = await aGateway(t, alice);
      const bobs = await aGateway(t, bob);
      const everything = await stream(t, { lastEventId: mark }, asOwner(admin));
      await everything.next(eventOf('device.claimed', bobs.deviceId), 2000);
      expect(everything.messages.some(eventOf('device.claimed', alices.deviceId))).toBe(true);
      const narrowed = await stream(t, { lastEventId: mark, deviceId: bobs.deviceId }, asOwner(admin));
      await narrowed.next(eventOf('device.claimed', bobs.deviceId), 2000);
      expect(narrowed.messages.some(eventOf('device.claimed', alices.deviceId))).toBe(false);
    });
  });
});

describe('bounds', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ STREAM_MAX_PER_USER: '2', STREAM_MAX_BUFFERED_BYTES: '65536', STREAM_HEARTBEAT_MS: '500', LOGIN_MAX_FAILURES_PER_ADDRESS: '5', TELEMETRY_MAX_REQUESTS_PER_DEVICE: '100000' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses an account’s stream past STREAM_MAX_PER_USER with 429 TOO_MANY_STREAMS, others unaffected; a closed stream frees its place', async () => {
    const carol = await aCustomer(t);
    const dave = await aCustomer(t);
    const first = await stream(t, {}, asOwner(carol));
    await stream(t, {}, asOwner(carol));
    const third = await stream(t, {}, asOwner(carol));
    expect(third.status).toBe(429);
    expect(JSON.parse(third.body)).toMatchObject({ code: 'TOO_MANY_STREAMS', status: 429 });
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
    expect((await stream(t, { ticket: await aTicket(t, carol) })).status).toBe(429);
    expect((await stream(t, {}, asOwner(dave))).status).toBe(200);

    first.close();
    await eventually(async () => {
      const next = await stream(t, {}, asOwner(carol));
      expect(next.status).toBe(200);
    }, 3000);
  });

  it('drops a subscriber that stops reading once its backlog passes the bound, while the others get everything', async () => {
    const erin = await aCustomer(t);
    const gateway = await aGateway(t, erin);
    const healthy = await stream(t, {}, asOwner(erin));

    // A client that reads the headers and then nothing: its socket is paused.
    const stalled = net.connect(Number(new URL(t.baseUrl).port), '127.0.0.1');
    let received = '';
    let closed = false;
    let reading = true;
    stalled.on('data', (chunk) => {
      received += chunk.toString();
      if (reading && received.includes('\r\n\r\n')) {
        reading = false;
        stalled.pause();
      }
    });
    stalled.on('close', () => (closed = true));
    stalled.write(`GET /api/v1/dashboard/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${erin.accessToken}\r\nAccept: text/event-stream\r\n\r\n`);
    await eventually(() => expect(received).toContain('200 OK'), 3000);

    // About 6 MB of frames: more than the loopback socket buffers (~4 MB) and the 64 KiB bound.
    const wide = Object.fromEntries(Array.from({ length: 60 }, (_, index) => [`metric_${index}`, index + 0.125]));
    const records = Array.from({ length: 5000 }, (_, index) => aRecord(index, wide));
    await ingestAll(t.api, gateway.accessToken, records);

    await healthy.next(telemetryOf(gateway.deviceId, 4999), 10_000);
    expect(healthy.messages.filter(telemetryOf(gateway.deviceId)).length).toBe(5000);

    // Reading again once a heartbeat found its backlog too old and dropped it, the stalled client finds its stream cut short.
    await eventually(() => expect(t.app.get(StreamsService).openStreams()).toBe(1), 10_000);
    stalled.resume();
    await eventually(() => expect(closed).toBe(true), 10_000);
    const framesReceived = received.split('event: telemetry').length - 1;
    expect(framesReceived).toBeLessThan(5000);
    expect(healthy.ended).toBe(false);
  });

  it('counts failed ticket redemptions against the client address: 429 once the limit is reached', async () => {
    const frank = await aCustomer(t);
    for (let attempt = 0; attempt < 5; attempt++) expect((await stream(t, { ticket: `st_${String(attempt).repeat(43)}` })).status).toBe(401);
    const limited = await stream(t, { ticket: await aTicket(t, frank) });
    expect(limited.status).toBe(429);
    expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(limited.body)).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });
});
