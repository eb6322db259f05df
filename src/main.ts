import 'reflect-metadata';
import type { Server } from 'node:http';
import type { Server as TlsServer } from 'node:tls';
import { createApp } from './configure-app.js';
import { InvalidEnvironmentError, loadEnv, type Env } from './config/env.js';
import { resolveSecrets } from './config/secrets.js';
import { loadTlsCredentials, reloadCertificate, type TlsCredentials } from './config/tls.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './shared/database/embedded-postgres.js';
import { ShutdownState } from './health/shutdown-state.js';
import { logEventLoopDelay } from './shared/event-loop-log.js';
import { listeningUrl } from './shared/mail/public-base-url.js';

function log(level: 'info' | 'error', msg: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ level, time: new Date().toISOString(), msg, ...extra }) + '\n');
}

function readEnv(): { env: Env; tls: TlsCredentials | undefined } {
  try {
    const env = loadEnv();
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
function reloadCertificateOnSighup(server: TlsServer, initial: TlsCredentials): void {
  let current = initial;
  process.on('SIGHUP', () => {
    try {
      current = reloadCertificate(server, current);
      log('info', 'TLS certificate reloaded', { certFile: current.certFile });
    } catch (error) {
      const problems = error instanceof InvalidEnvironmentError ? error.problems : [String(error)];
      log('error', 'TLS certificate not reloaded; still serving the previous one', { problems });
    }
  });
}

async function bootstrap(): Promise<void> {
  const { env, tls } = readEnv();
  const secrets = resolveSecrets(env);
  let embedded: EmbeddedPostgresHandle | undefined;
  let databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) {
    log('info', 'No DATABASE_URL: starting embedded PostgreSQL', { dataDir: env.DATA_DIR, port: env.EMBEDDED_POSTGRES_PORT });
    embedded = await startEmbeddedPostgres({ dataDir: env.DATA_DIR, port: env.EMBEDDED_POSTGRES_PORT, persistent: true });
    await embedded.createDatabase('device_cloud');
    databaseUrl = embedded.url('device_cloud');
  }
  // Migrations run inside the application (DatabaseConnection): the service starts, and answers
  // 503 until they are done, also while PostgreSQL is still down.
  const app = await createApp({ env, secrets, databaseUrl }, tls);
  await app.listen({ port: env.PORT, host: env.HOST });
  log('info', 'Device Cloud Service listening', { url: listeningUrl(app.getHttpServer()), docs: '/docs', node: process.version });
  if (tls) reloadCertificateOnSighup(app.getHttpServer() as unknown as TlsServer, tls);
  if (env.EVENT_LOOP_LOG_MS > 0) logEventLoopDelay(env.EVENT_LOOP_LOG_MS);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('info', 'Shutting down', { signal });
    app.get(ShutdownState).beginShutdown();
    // Readiness is down and every answer says Connection: close; still listening meanwhile, so
    // clients of a load balancer that has not noticed yet are served, not refused.
    await new Promise((done) => setTimeout(done, env.SHUTDOWN_DELAY_MS));
    // Requests still open after the grace period (a stalled upload, say) lose their connection,
    // so that the pool and the embedded database still close in order.
    const grace = setTimeout(() => {
      log('error', 'Requests still open after SHUTDOWN_GRACE_MS; closing their connections');
      (app.getHttpServer() as Server).closeAllConnections();
    }, env.SHUTDOWN_GRACE_MS);
    grace.unref();
    const deadline = setTimeout(() => {
      log('error', 'Shutdown took too long; exiting');
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
  log('error', 'Failed to start', { error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
});
