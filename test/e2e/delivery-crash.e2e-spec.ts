import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { eventually } from '../support/eventually.js';
import { jobsSettled } from '../support/jobs.js';
import { createTestDatabase, endPool } from '../support/postgres.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';
import { buildService, freePort, killService, scratchDir, startService, waitUntilReady, type Running } from '../support/service-process.js';

/**
 * Deliveries are jobs in PostgreSQL, not promises in a process: a service killed with SIGKILL while
 * mails wait for an SMTP server that is down loses none of them; the next start sends each once.
 */
describe('SIGKILL while mails are queued', () => {
  let main = '';
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let sink: SmtpSink | undefined;
  let service: Running | undefined;
  let db: pg.Pool;

  beforeAll(async () => {
    main = await buildService();
    database = await createTestDatabase();
    db = new pg.Pool({ connectionString: database.url, max: 1 });
  }, 120_000);

  afterAll(async () => {
    await killService(service);
    await sink?.close();
    await endPool(db);
    await database?.drop();
  });

  it('sends every queued mail exactly once after the restart', async () => {
    const smtpPort = await freePort();
    const port = await freePort();
    const env = {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: scratchDir(),
      DATABASE_URL: database.url,
      SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
      DELIVERY_RETRY_DELAY_SEC: '1',
      DELIVERY_RETRY_DELAY_MAX_SEC: '2',
      JOB_POLL_INTERVAL_MS: '500',
      SIGNUP_MAX_PER_ADDRESS_PER_HOUR: '1000',
    };
    service = await startService(main, env);
    await waitUntilReady(port);

    const emails = Array.from({ length: 12 }, () => `crash-${randomBytes(5).toString('hex')}@example.com`);
    for (const email of emails) {
      const answer = await fetch(`http://127.0.0.1:${port}/api/v1/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'crash-test-password-1' }),
      });
      expect(answer.status).toBe(201);
    }
    // Let the worker fail attempts against the closed SMTP port, then kill it between two of them,
    // with every mail waiting for its next attempt. (One caught mid-attempt waits out its expiry,
    // 120 s, before pg-boss hands it out again: pg-boss's own recovery, which would make this test
    // take minutes in some runs and seconds in others.)
    await eventually(async () => {
      const { rows } = await db.query<{ retried: number; active: number }>(
        "SELECT count(*) FILTER (WHERE retry_count > 0)::int AS retried, count(*) FILTER (WHERE state = 'active')::int AS active FROM pgboss.job WHERE name = 'mail.verification'",
      );
      expect(rows[0].retried).toBeGreaterThan(1);
      expect(rows[0].active).toBe(0);
    });
    service.child.kill('SIGKILL');
    await service.exited;

    sink = await startSmtpSink({ port: smtpPort });
    service = await startService(main, env);
    await waitUntilReady(port);

    // Each goes out at once (within its backoff); one the kill caught mid-attempt all the same
    // counts as failed once its expiry (120 s) has passed, found by pg-boss's supervisor (every 60 s).
    for (const email of emails) await sink.waitForMessage(email, 200_000);
    await jobsSettled(db);
    for (const email of emails) expect(sink.messagesTo(email)).toHaveLength(1);
  }, 300_000);
});
