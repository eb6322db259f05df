import {
  createDeviceCloudClient,
  DeviceCloudProblem,
  openDashboardStream,
  signIn,
  unwrap,
  type DashboardStream,
  type DashboardStreamOptions,
  type DeviceCloudClient,
  type DeviceCloudClientOptions,
  type DeviceEvent,
  type SessionTokens,
  type StreamTelemetry,
} from '@device-cloud/client';
import { EventSource } from 'eventsource';
import { aClaimedDevice, aCustomer, claim, aRegisteredDevice, CUSTOMER_PASSWORD, type SignedIn } from '../support/claim-fixtures.js';
import { contractCheck } from '../support/contract.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { craftAccessToken } from '../support/crafted-tokens.js';
import { eventually } from '../support/eventually.js';
import { fileScanner } from '../support/leak-scan.js';
import { ingest, iso } from '../support/telemetry.js';

/** How long a stream may take to open or deliver: seconds on a CI machine with a load average of 8–15, milliseconds when idle. */
const WAIT_MS = 15_000;

/*
 * The client package (clients/typescript, @device-cloud/client) against the real service: the
 * session that refreshes itself, problem documents as errors, and the dashboard stream.
 */

const sidOf = (accessToken: string) => (JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString()) as { sid: string }).sid;

describe('@device-cloud/client', () => {
  let t: TestApp;
  /** Every request a client of this file sent, as "METHOD /path", in order. */
  let sent: string[];

  beforeAll(async () => {
    t = await createTestApp({ RESEND_VERIFICATION_MAX_PER_HOUR: '1' });
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(() => {
    sent = [];
  });

  /** A client of the package on the test app, its answers checked against openapi.json and scanned for leaks. */
  function aClient(options: Partial<DeviceCloudClientOptions> = {}): DeviceCloudClient {
    const api = createDeviceCloudClient({
      baseUrl: t.baseUrl,
      fetch: (request: Request) => {
        sent.push(`${request.method} ${new URL(request.url).pathname}`);
        return (options.fetch ?? fetch)(request);
      },
      ...(({ fetch: _fetch, ...rest }) => rest)(options),
    });
    api.use(contractCheck, fileScanner.middleware);
    return api;
  }

  /** A customer signed in through the package, whose access token is then swapped for an expired one of the same session. */
  async function aSessionWithExpiredToken(options: Partial<DeviceCloudClientOptions> = {}): Promise<{ api: DeviceCloudClient; customer: SignedIn; expired: SessionTokens }> {
    const customer = await aCustomer(t);
    const api = aClient(options);
    await signIn(api, customer.email, CUSTOMER_PASSWORD);
    const now = Math.floor(Date.now() / 1000);
    const accessToken = craftAccessToken(
      { sub: customer.userId, sid: sidOf(api.session.tokens!.accessToken), role: 'customer', aud: 'device-cloud:customer' },
      t.secrets.customerJwtSecret,
      { payload: { iat: now - 960, exp: now - 60 } },
    );
    api.session.set({ accessToken, refreshToken: api.session.tokens!.refreshToken });
    sent = [];
    return { api, customer, expired: api.session.tokens! };
  }

  describe('the session', () => {
    it('refreshes an expired access token once, sends the call again with the new one and answers it; the new pair is kept', async () => {
      const kept: (SessionTokens | null)[] = [];
      const { api, customer, expired } = await aSessionWithExpiredToken({ session: { onChange: (tokens) => kept.push(tokens) } });

      const { data, response } = await api.GET('/api/v1/users/me');

      expect(response.status).toBe(200);
      expect(data?.userId).toBe(customer.userId);
      expect(sent).toEqual(['GET /api/v1/users/me', 'POST /api/v1/auth/refresh', 'GET /api/v1/users/me']);
      const renewed = api.session.tokens!;
      expect(renewed.accessToken).not.toBe(expired.accessToken);
      expect(renewed.refreshToken).not.toBe(expired.refreshToken);
      expect(sidOf(renewed.accessToken)).toBe(sidOf(expired.accessToken));
      expect(kept.at(-1)).toEqual(renewed);
    });

    it('sends a call with a body again, body and all', async () => {
      const { api, customer } = await aSessionWithExpiredToken();

      const { data, response } = await api.PATCH('/api/v1/users/me', { body: { alertEmails: false } });

      expect(response.status).toBe(200);
      expect(data?.alertEmails).toBe(false);
      expect(sent).toEqual(['PATCH /api/v1/users/me', 'POST /api/v1/auth/refresh', 'PATCH /api/v1/users/me']);
      const { rows } = await t.db.query<{ alert_emails: boolean }>('SELECT alert_emails FROM users WHERE id = $1', [customer.userId]);
      expect(rows).toEqual([{ alert_emails: false }]);
    });

    it('calls refused together share one refresh (a refresh token is single use), and each is answered', async () => {
      const { api, customer } = await aSessionWithExpiredToken();

      const [me, devices, owned] = await Promise.all([api.GET('/api/v1/users/me'), api.GET('/api/v1/dashboard/devices'), api.GET('/api/v1/user/devices')]);

      expect([me.response.status, devices.response.status, owned.response.status]).toEqual([200, 200, 200]);
      expect(me.data?.userId).toBe(customer.userId);
      expect(sent.filter((call) => call === 'POST /api/v1/auth/refresh')).toHaveLength(1);
      expect(sent).toHaveLength(7);
    });

    it('when the session was revoked: the call answers its 401, onSessionExpired is called once with the refusal, the session is cleared', async () => {
      const customer = await aCustomer(t);
      const expiredWith: DeviceCloudProblem[] = [];
      const kept: (SessionTokens | null)[] = [];
      const api = aClient({ onSessionExpired: (problem) => expiredWith.push(problem), session: { onChange: (tokens) => kept.push(tokens) } });
      await signIn(api, customer.email, CUSTOMER_PASSWORD);
      // Logged out elsewhere (another tab, a stolen token revoked): its access tokens stop at once.
      expect((await t.api.POST('/api/v1/auth/logout', { body: { refreshToken: api.session.tokens!.refreshToken } })).response.status).toBe(204);
      sent = [];

      const [me, devices] = await Promise.all([api.GET('/api/v1/users/me'), api.GET('/api/v1/dashboard/devices')]);

      for (const refused of [me, devices]) {
        expect(refused.response.status).toBe(401);
        expect(refused.error?.code).toBe('UNAUTHORIZED');
        expect(refused.response.headers.get('www-authenticate')).toContain('error="invalid_token"');
      }
      expect(sent.filter((call) => call === 'POST /api/v1/auth/refresh')).toHaveLength(1);
      expect(expiredWith).toHaveLength(1);
      expect(expiredWith[0]).toBeInstanceOf(DeviceCloudProblem);
      expect({ status: expiredWith[0].status, code: expiredWith[0].code }).toEqual({ status: 401, code: 'INVALID_TOKEN' });
      expect(api.session.tokens).toBeNull();
      expect(kept.at(-1)).toBeNull();

      // Signed out: the next call goes without a token, and nothing is refreshed.
      sent = [];
      expect((await api.GET('/api/v1/users/me')).response.status).toBe(401);
      expect(sent).toEqual(['GET /api/v1/users/me']);
    });

    it('leaves a call that brings its own Authorization alone (a device call, say): no token added, nothing refreshed', async () => {
      const { api, expired } = await aSessionWithExpiredToken();

      const { response } = await api.GET('/api/v1/users/me', { headers: { authorization: 'Bearer not-a-token' } });

      expect(response.status).toBe(401);
      expect(sent).toEqual(['GET /api/v1/users/me']);
      expect(api.session.tokens).toEqual(expired);
    });
  });

  describe('problems', () => {
    it('a 404 as a DeviceCloudProblem: status, code, title, detail, request id; unwrap throws it', async () => {
      const customer = await aCustomer(t);
      const api = aClient();
      await signIn(api, customer.email, CUSTOMER_PASSWORD);
      const call = () => api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: 'gw-nobody-has' } } });

      const result = await call();
      const problem = DeviceCloudProblem.from(result);

      expect(problem).toBeInstanceOf(Error);
      expect(problem).toBeInstanceOf(DeviceCloudProblem);
      expect(result.error).toBeDefined();
      expect({ ...problem }).toEqual({
        name: 'DeviceCloudProblem',
        status: 404,
        code: 'NOT_FOUND',
        type: result.error!.type,
        title: result.error!.title,
        detail: result.error!.detail,
        instance: '/api/v1/dashboard/devices/gw-nobody-has',
        requestId: result.response.headers.get('x-request-id'),
        errors: undefined,
        retryAfterSec: undefined,
      });
      expect(problem.message).toBe(result.error!.detail);
      await expect(unwrap(call())).rejects.toMatchObject({ name: 'DeviceCloudProblem', status: 404, code: 'NOT_FOUND', detail: result.error!.detail });
    });

    it('a 400 carries the fields at fault', async () => {
      const customer = await aCustomer(t);
      const api = aClient();
      await signIn(api, customer.email, CUSTOMER_PASSWORD);

      const failure = await unwrap(api.PATCH('/api/v1/users/me', { body: { alertEmails: 'yes' as unknown as boolean } })).catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(DeviceCloudProblem);
      const problem = failure as DeviceCloudProblem;
      expect({ status: problem.status, code: problem.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
      expect(problem.errors?.map((error) => error.field)).toEqual(['alertEmails']);
      expect(problem.requestId).toMatch(/\S/);
    });

    it('a 429 carries Retry-After as retryAfterSec', async () => {
      const customer = await aCustomer(t, { verified: false });
      const api = aClient();
      await signIn(api, customer.email, CUSTOMER_PASSWORD);
      expect(await unwrap(api.POST('/api/v1/auth/resend-verification'))).toBeUndefined();

      const failure = await unwrap(api.POST('/api/v1/auth/resend-verification')).catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(DeviceCloudProblem);
      const problem = failure as DeviceCloudProblem;
      expect({ status: problem.status, code: problem.code }).toEqual({ status: 429, code: 'RATE_LIMITED' });
      expect(problem.retryAfterSec).toBeGreaterThan(0);
      expect(problem.retryAfterSec).toBeLessThanOrEqual(3600);
    });
  });

  describe('the dashboard stream', () => {
    const streams: DashboardStream[] = [];
    afterEach(() => {
      for (const stream of streams.splice(0)) stream.close();
    });

    /** What a stream handed to its callbacks, in order. */
    interface Received {
      telemetry: StreamTelemetry[];
      events: DeviceEvent[];
      opened: boolean[];
      closes: number;
      errors: unknown[];
      urls: URL[];
    }

    function open(api: DeviceCloudClient, options: DashboardStreamOptions = {}): Received {
      const received: Received = { telemetry: [], events: [], opened: [], closes: 0, errors: [], urls: [] };
      class RecordedEventSource extends EventSource {
        constructor(url: string) {
          super(url);
          received.urls.push(new URL(url));
        }
      }
      streams.push(
        openDashboardStream(api, {
          EventSource: RecordedEventSource,
          reconnectDelayMs: 50,
          onTelemetry: (message) => received.telemetry.push(message),
          onEvent: (event) => received.events.push(event),
          onOpen: (resumed) => received.opened.push(resumed),
          onClose: () => (received.closes += 1),
          onError: (error) => received.errors.push(error),
          ...options,
        }),
      );
      return received;
    }

    async function aSignedInClient(options: Partial<DeviceCloudClientOptions> = {}): Promise<{ api: DeviceCloudClient; owner: SignedIn }> {
      const owner = await aCustomer(t);
      const api = aClient(options);
      await signIn(api, owner.email, CUSTOMER_PASSWORD);
      return { api, owner };
    }

    it('opens with a ticket and hands over each record a gateway sends', async () => {
      const { api, owner } = await aSignedInClient();
      const device = await aClaimedDevice(t, owner);
      const received = open(api);
      await eventually(() => expect(received.opened).toEqual([false]), WAIT_MS);
      expect(sent).toContain('POST /api/v1/dashboard/stream/tickets');
      expect(received.urls[0].searchParams.get('ticket')).toMatch(/^st_/);

      const ts = iso(Date.now());
      expect((await ingest(t.api, device.registered.accessToken, [{ ts, metrics: { soc: 64.5, voltage: 13.05 } }])).response.status).toBe(200);

      await eventually(() => expect(received.telemetry).toEqual([{ deviceId: device.body.deviceId, batteryId: 'main', ts, metrics: { soc: 64.5, voltage: 13.05 } }]), WAIT_MS);
      expect(received.errors).toEqual([]);
    });

    it('after a break, reconnects with a fresh ticket from the last event received: what happened meanwhile is replayed, nothing twice', async () => {
      let release = () => {};
      let gate: Promise<void> = Promise.resolve();
      const { api, owner } = await aSignedInClient({
        // The test holds the reconnection's ticket until it has made an event during the break.
        fetch: async (request: Request) => {
          if (new URL(request.url).pathname === '/api/v1/dashboard/stream/tickets') await gate;
          return fetch(request);
        },
      });
      const received = open(api);
      await eventually(() => expect(received.opened).toEqual([false]), WAIT_MS);
      const before = await aRegisteredDevice(t);
      expect((await claim(t, owner, { deviceId: before.body.deviceId, claimCode: before.body.claimCode })).response.status).toBe(200);
      await eventually(() => expect(received.events.map((event) => event.deviceId)).toEqual([before.body.deviceId]), WAIT_MS);
      const seen = received.events[0].id;

      gate = new Promise((resolve) => (release = resolve));
      t.app.getHttpServer().closeAllConnections();
      await eventually(() => expect(received.closes).toBe(1), WAIT_MS);
      const during = await aRegisteredDevice(t);
      expect((await claim(t, owner, { deviceId: during.body.deviceId, claimCode: during.body.claimCode })).response.status).toBe(200);
      release();

      await eventually(() => expect(received.opened).toEqual([false, true]), WAIT_MS);
      await eventually(() => expect(received.events.map((event) => event.deviceId)).toEqual([before.body.deviceId, during.body.deviceId]), WAIT_MS);
      expect(received.urls).toHaveLength(2);
      expect(received.urls[1].searchParams.get('lastEventId')).toBe(seen);
      expect(received.urls[1].searchParams.get('ticket')).not.toBe(received.urls[0].searchParams.get('ticket'));
      expect(received.events.map((event) => event.type)).toEqual(['device.claimed', 'device.claimed']);
    });

    it('gives up when the session has ended: the ticket is refused (after one refresh), onError gets the problem, no more tries', async () => {
      const expired: DeviceCloudProblem[] = [];
      const { api } = await aSignedInClient({ onSessionExpired: (problem) => expired.push(problem) });
      expect((await t.api.POST('/api/v1/auth/logout', { body: { refreshToken: api.session.tokens!.refreshToken } })).response.status).toBe(204);
      sent = [];

      const received = open(api);

      await eventually(() => expect(received.errors).toHaveLength(1), WAIT_MS);
      expect(received.errors[0]).toBeInstanceOf(DeviceCloudProblem);
      expect((received.errors[0] as DeviceCloudProblem).status).toBe(401);
      expect(expired).toHaveLength(1);
      // Ten reconnection delays later, nothing more was tried.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(sent).toEqual(['POST /api/v1/dashboard/stream/tickets', 'POST /api/v1/auth/refresh']);
      expect(received.urls).toEqual([]);
    });
  });
});
