import 'reflect-metadata';
import type { Server } from 'node:http';
import type { Server as TlsServer } from 'node:tls';
import { createApp } from './configure-app.js';
import { InvalidEnvironmentError, loadEnv, type Env } from './config/env.js';
import { resolveSecrets } from './config/secrets.js';
import { loadTlsCredentials, reloadCertificate, type TlsCredentials } from './config/tls.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './shared/database/embedded-postgres.js';
import { SchedulerRegistry } from '@nestjs/schedule';
import { ShutdownState } from './health/shutdown-state.js';
import { stopScheduledWork } from './shared/scheduled-work.js';
import { adminPasswordProblem } from './modules/accounts/index.js';
import { logEventLoopDelay } from './shared/event-loop-log.js';
import { processLogger } from './shared/logging.js';
import { listeningUrl } from './shared/mail/public-base-url.js';
import type { Logger } from 'pino';

function readEnv(): { env: Env; tls: TlsCredentials | undefined } {
  try {
    const env = loadEnv();
    const adminProblem = env.ADMIN_EMAIL && env.ADMIN_PASSWORD ? adminPasswordProblem(env.ADMIN_EMAIL, env.ADMIN_PASSWORD) : null;
    if (adminProblem) throw new InvalidEnvironmentError([adminProblem]);
    return { env, tls: loadTlsCredentials(env) };
  } catch (error) {
    if (error instanceof InvalidEnvironmentError) {
      process.stderr.write(`Configuration error — fix these environment variables and start again:\n${error.problems.map((p) => `  - ${p}`).join('\n')}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/** A renewed certificate is put in place without a restart: open connections are kept. */
function reloadCertificateOnSighup(server: TlsServer, initial: TlsCredentials, log: Logger): void {
  let current = initial;
  process.on('SIGHUP', () => {
    try {
      current = reloadCertificate(server, current);
      log.info({ certFile: current.certFile }, 'TLS certificate reloaded');
    } catch (error) {
      const problems = error instanceof InvalidEnvironmentError ? error.problems : [String(error)];
      log.error({ problems }, 'TLS certificate not reloaded; still serving the previous one');
    }
  });
}

/** Until the environment is read: JSON lines, as every later line under a non-terminal stdout. */
let log: Logger = processLogger(loadEnv({ LOG_FORMAT: 'json' }));

async function bootstrap(): Promise<void> {
  const { env, tls } = readEnv();
  // The start, stop and certificate lines are written whatever LOG_LEVEL says: supervisors and
  // the tests wait for "listening", and a service that says nothing of its start is hard to run.
  log = processLogger(env, ['debug', 'trace'].includes(env.LOG_LEVEL) ? env.LOG_LEVEL : 'info');
  const secrets = resolveSecrets(env);
  let embedded: EmbeddedPostgresHandle | undefined;
  let databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) {
    log.info({ dataDir: env.DATA_DIR, port: env.EMBEDDED_POSTGRES_PORT }, 'No DATABASE_URL: starting embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({ dataDir: env.DATA_DIR, port: env.EMBEDDED_POSTGRES_PORT, persistent: true });
    await embedded.createDatabase('device_cloud');
    databaseUrl = embedded.url('device_cloud');
  }
  // Migrations run inside the application (DatabaseConnection): the service starts, and answers
  // 503 until they are done, also while PostgreSQL is still down.
  const app = await createApp({ env, secrets, databaseUrl }, tls);
  await app.listen({ port: env.PORT, host: env.HOST });
  log.info({ url: listeningUrl(app.getHttpServer()), docs: '/docs', node: process.version }, 'Device Cloud Service listening');
  if (tls) reloadCertificateOnSighup(app.getHttpServer() as unknown as TlsServer, tls, log);
  // Whatever LOG_LEVEL says: the benchmark's soak reads these lines.
  if (env.EVENT_LOOP_LOG_MS > 0) logEventLoopDelay(env.EVENT_LOOP_LOG_MS, processLogger(env, 'info'));

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'Shutting down');
    app.get(ShutdownState).beginShutdown();
    await stopScheduledWork(app.get(SchedulerRegistry));
    // Readiness is down and every answer says Connection: close; still listening meanwhile, so
    // clients of a load balancer that has not noticed yet are served, not refused.
    await new Promise((done) => setTimeout(done, env.SHUTDOWN_DELAY_MS));
    // Requests still open after the grace period (a stalled upload, say) lose their connection,
    // so that the pool and the embedded database still close in order.
    const grace = setTimeout(() => {
      log.warn('Requests still open after SHUTDOWN_GRACE_MS; closing their connections');
      (app.getHttpServer() as Server).closeAllConnections();
    }, env.SHUTDOWN_GRACE_MS);
    grace.unref();
    const deadline = setTimeout(() => {
      log.error('Shutdown took too long; exiting');
      process.exit(1);
    }, env.SHUTDOWN_GRACE_MS + 5000);
    deadline.unref();
    try {
      await app.close();
      await embedded?.stop();
    } finally {
      process.exit(0);
    }
  };
  // embedded-postgres's exit hook would exit (128 + signal) on these signals, while requests still
  // run; main.ts stops its PostgreSQL after the last one instead (the server runs in a process group
  // of its own, so a terminal's Ctrl-C reaches only this process).
  if (embedded) for (const signal of ['SIGTERM', 'SIGINT'] as const) process.removeAllListeners(signal);
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

bootstrap().catch((error: unknown) => {
  log.fatal({ error: error instanceof Error ? error.message : String(error) }, 'Failed to start');
  process.exit(1);
});
