import { createServer, type Server, type Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { ADMIN_SETTINGS, anAdmin, aCustomer } from '../support/claim-fixtures.js';
import { createTestApp, startTestApp, type TestApp } from '../support/create-test-app.js';
import { aSignup, signUp, userIdOf } from '../support/customers.js';
import { PASSWORD_RESET_MAIL_QUEUE } from '../../src/modules/accounts/application/account-mails.js';
import { eventually } from '../support/eventually.js';
import { createTestDatabase } from '../support/postgres.js';
import { expectProblem } from '../support/problems.js';
import { jobsSettled } from '../support/jobs.js';
import { freePort } from '../support/service-process.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';

/**
 * Mail goes through the durable job queue (pg-boss on the service's database): sign-up never waits
 * for SMTP, a mail that could not go out is retried with backoff until the server takes it, and one
 * that never could is listed for the administrator. Every mail here is a real SMTP conversation.
 */

/** Retries every second, so a test sees several attempts; the defaults retry for more than 24 h. */
const FAST_RETRIES = { DELIVERY_RETRY_DELAY_SEC: '1', DELIVERY_RETRY_DELAY_MAX_SEC: '1', JOB_POLL_INTERVAL_MS: '500' };
const PUBLIC_BASE_URL = 'https://dash.example';

/** A TCP server that accepts connections and never says a word (no SMTP greeting). */
async function silentServer(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `smtp://127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}

/** An SMTP server that greets, takes the envelope, then stalls in DATA and never answers it. */
async function stallingInDataServer(): Promise<{ url: string; dataStarted: () => number; close: () => Promise<void> }> {
  let dataStarted = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    closeTimeout: 100,
    onData(stream) {
      dataStarted += 1;
      stream.resume(); // reads the message and never calls back: no answer to DATA
    },
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `smtp://127.0.0.1:${port}`, dataStarted: () => dataStarted, close: () => new Promise((done) => server.close(() => done())) };
}

/**
 * One sign-up before the timed ones: the first request of a fresh app pays for compiling and
 * preparing what every later one reuses, which has nothing to do with SMTP.
 */
async function warmUp(t: TestApp): Promise<void> {
  expect((await t.api.POST('/api/v1/auth/signup', { body: aSignup() })).response.status).toBe(201);
}

async function timedSignup(t: TestApp, body = aSignup()): Promise<{ email: string; ms: number; status: number }> {
  const started = performance.now();
  const { response, data } = await t.api.POST('/api/v1/auth/signup', { body });
  return { email: data?.email ?? body.email, ms: performance.now() - started, status: response.status };
}

async function jobsOf(t: TestApp, queue: string, userId: string) {
  const { rows } = await t.db.query<{ state: string; retry_count: number }>(`SELECT state, retry_count FROM pgboss.job WHERE name = $1 AND data->>'userId' = $2`, [queue, userId]);
  return rows;
}

function linkTokenOf(text: string): string {
  const match = /verify-email\?token=(\S+)/.exec(text);
  if (!match) throw new Error('the mail holds no verification link');
  return decodeURIComponent(match[1]);
}

describe('sign-up does not wait for SMTP', () => {
  it('answers within 1 s while the SMTP server accepts connections and never greets', async () => {
    const silent = await silentServer();
    const t = await createTestApp({ SMTP_URL: silent.url, ...FAST_RETRIES });
    try {
      await warmUp(t);
      const signups = [await timedSignup(t), await timedSignup(t), await timedSignup(t)];
      for (const signup of signups) {
        expect(signup.status).toBe(201);
        expect(signup.ms).toBeLessThan(1_000);
      }
      // The worker did try: it is the one waiting on the silent server, not the request.
      await eventually(() => expect(silent.connections()).toBeGreaterThan(0));
    } finally {
      await t.close();
      await silent.close();
    }
  });

  it('answers within 1 s while the SMTP server stalls in the data phase', async () => {
    const stalling = await stallingInDataServer();
    const t = await createTestApp({ SMTP_URL: stalling.url, ...FAST_RETRIES });
    try {
      await warmUp(t);
      const signup = await timedSignup(t);
      expect(signup.status).toBe(201);
      expect(signup.ms).toBeLessThan(1_000);
      await eventually(() => expect(stalling.dataStarted()).toBeGreaterThan(0));
      const second = await timedSignup(t);
      expect(second.status).toBe(201);
      expect(second.ms).toBeLessThan(1_000);
    } finally {
      await t.close();
      await stalling.close();
    }
  });
});

describe('with SMTP refusing connections, then back', () => {
  let t: TestApp;
  let port: number;
  let sink: SmtpSink | undefined;

  beforeAll(async () => {
    port = await freePort();
    t = await createTestApp({ SMTP_URL: `smtp://127.0.0.1:${port}`, PUBLIC_BASE_URL, ...FAST_RETRIES });
    await warmUp(t);
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  it('answers the sign-up within 1 s, retries the mail with backoff, and delivers it once SMTP accepts, without the user asking again', async () => {
    const body = aSignup();
    const signup = await timedSignup(t, body);
    expect(signup.status).toBe(201);
    expect(signup.ms).toBeLessThan(1_000);
    const userId = await userIdOf(t, signup.email);

    // Attempts fail and are retried: the job waits in `retry` with its count going up.
    await eventually(async () => expect(await jobsOf(t, 'mail.verification', userId)).toEqual([{ state: 'retry', retry_count: expect.any(Number) }]));
    await eventually(async () => expect((await jobsOf(t, 'mail.verification', userId))[0].retry_count).toBeGreaterThanOrEqual(2), 15_000);

    sink = await startSmtpSink({ port });
    const mail = await sink.waitForMessage(signup.email, 15_000);

    expect(mail.subject).toBe('Confirm your e-mail address');
    const verified = await t.api.POST('/api/v1/auth/verify-email', { body: { token: linkTokenOf(mail.text) } });
    expect(verified.response.status).toBe(200);
    await eventually(async () => expect(await jobsOf(t, 'mail.verification', userId)).toEqual([{ state: 'completed', retry_count: expect.any(Number) }]));
    // Exactly one mail: the attempts that failed sent nothing.
    expect(sink.messagesTo(signup.email)).toHaveLength(1);
  });
});

describe('a mail that never goes out is listed as a failed delivery', () => {
  let t: TestApp;

  beforeAll(async () => {
    // One retry only, so the test sees a delivery give up; the rule for production is ≥ 24 h.
    t = await createTestApp({ SMTP_URL: `smtp://127.0.0.1:${await freePort()}`, ...FAST_RETRIES, DELIVERY_RETRY_LIMIT: '1', ...ADMIN_SETTINGS });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('GET /api/v1/admin/deliveries?state=failed shows channel, target, attempts and the last error code, never the content', async () => {
    const admin = await anAdmin(t);
    const signup = await timedSignup(t);
    expect(signup.status).toBe(201);

    const { data } = await eventually(async () => {
      const answer = await t.api.GET('/api/v1/admin/deliveries', { params: { query: { state: 'failed' } }, headers: admin.headers });
      expect(answer.response.status).toBe(200);
      expect(answer.data!.items.filter((item) => item.target === signup.email)).toHaveLength(1);
      return answer;
    }, 20_000);

    const item = data!.items.find((candidate) => candidate.target === signup.email)!;
    expect(item).toEqual({
      deliveryId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      channel: 'email',
      kind: 'mail.verification',
      target: signup.email,
      attempts: 2,
      lastErrorCode: 'SMTP_CONNREFUSED',
      createdAt: expect.any(String),
      failedAt: expect.any(String),
    });
    expect(Date.parse(item.failedAt)).toBeGreaterThanOrEqual(Date.parse(item.createdAt));
    expect(JSON.stringify(data)).not.toMatch(/verify-email|token|Confirm/);
    // The job itself holds no token: the link's token is minted when a mail goes out.
    const userId = await userIdOf(t, signup.email);
    const { rows } = await t.db.query<{ data: object }>(`SELECT data FROM pgboss.job WHERE data->>'userId' = $1`, [userId]);
    // The job and its copy in the failed-deliveries queue.
    expect(rows.map((row) => row.data)).toEqual([{ to: signup.email, userId }, { to: signup.email, userId }]);
  });

  it('pages with limit and cursor', async () => {
    const admin = await anAdmin(t);
    const emails = [(await timedSignup(t)).email, (await timedSignup(t)).email];
    const all = await eventually(async () => {
      const answer = await t.api.GET('/api/v1/admin/deliveries', { params: { query: { state: 'failed', limit: 200 } }, headers: admin.headers });
      for (const email of emails) expect(answer.data!.items.map((item) => item.target)).toContain(email);
      return answer.data!.items;
    }, 20_000);

    const first = await t.api.GET('/api/v1/admin/deliveries', { params: { query: { state: 'failed', limit: 1 } }, headers: admin.headers });
    expect(first.data!.items).toEqual([all[0]]);
    const second = await t.api.GET('/api/v1/admin/deliveries', { params: { query: { state: 'failed', limit: 1, cursor: first.data!.nextCursor! } }, headers: admin.headers });
    expect(second.data!.items).toEqual([all[1]]);
    const bad = await t.api.GET('/api/v1/admin/deliveries', { params: { query: { state: 'failed', cursor: 'bm90LWEtam9i' } }, headers: admin.headers });
    expectProblem(bad, 400, 'VALIDATION_FAILED');
  });

  it('is for administrators only, and needs state', async () => {
    const customer = await aCustomer(t);
    const refused = await t.api.GET('/api/v1/admin/deliveries', { params: { query: { state: 'failed' } }, headers: customer.headers });
    expect(refused.response.status).toBe(403);
    const admin = await anAdmin(t);
    const missing = await t.api.GET('/api/v1/admin/deliveries', { params: { query: {} as { state: 'failed' } }, headers: admin.headers });
    expectProblem(missing, 400, 'VALIDATION_FAILED');
  });
});

describe('two instances on one PostgreSQL', () => {
  it('deliver each mail once', async () => {
    const sink = await startSmtpSink();
    const database = await createTestDatabase();
    const settings = { SMTP_URL: sink.url, ...FAST_RETRIES };
    const a = await startTestApp(database.url, settings);
    const b = await startTestApp(database.url, settings);
    try {
      const emails: string[] = [];
      for (let i = 0; i < 20; i++) {
        const signup = await timedSignup(i % 2 === 0 ? a : b);
        expect(signup.status).toBe(201);
        emails.push(signup.email);
      }
      for (const email of emails) await sink.waitForMessage(email, 15_000);
      // Both instances worked the queue, and once no mail job is left no address has a second mail.
      await jobsSettled(a.db);
      for (const email of emails) expect(sink.messagesTo(email)).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
      await sink.close();
    }
  });
});

describe('a backlog of mails that fall due together', () => {
  /*
   * Password-reset mails are due a second after their request, so NOTIFY (which announces a job as
   * it is sent) does not wake the workers for them: a worker that then waited the poll interval
   * after each job would send six of them, two workers at a time, over two intervals or more. At
   * the default interval (2 s) they must all have started within one.
   */
  it('goes out back to back, not one mail per worker per poll interval', async () => {
    const sink = await startSmtpSink();
    const t = await createTestApp({ SMTP_URL: sink.url, PUBLIC_BASE_URL });
    try {
      const emails: string[] = [];
      for (let i = 0; i < 6; i++) emails.push((await signUp(t)).email);
      await jobsSettled(t.db);
      for (const email of emails) expect((await t.api.POST('/api/v1/auth/password-reset', { body: { email } })).response.status).toBe(202);
      const resetMails = () => emails.filter((email) => sink.messagesTo(email).some((mail) => mail.subject === 'Reset your Device Cloud password'));
      await eventually(() => expect(resetMails()).toEqual(emails), 20_000);
      const { rows } = await t.db.query<{ jobs: number; spread_ms: number }>(
        `SELECT count(*)::int AS jobs, (extract(epoch FROM max(started_on) - min(started_on)) * 1000)::float8 AS spread_ms
           FROM pgboss.job WHERE name = $1`,
        [PASSWORD_RESET_MAIL_QUEUE],
      );
      expect(rows[0].jobs).toBe(emails.length);
      expect(rows[0].spread_ms).toBeLessThan(2_000);
    } finally {
      await t.close();
      await sink.close();
    }
  });
});
