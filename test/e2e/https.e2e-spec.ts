import { copyFileSync, writeFileSync } from 'node:fs';
import http2, { type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import https from 'node:https';
import { join } from 'node:path';
import tls from 'node:tls';
import { aRegistration, bearer, type Registered } from '../support/builders.js';
import { ADMIN_SETTINGS } from '../support/claim-fixtures.js';
import { selfSignedCertificate, type Certificate } from '../support/certificates.js';
import { createTestDatabase } from '../support/postgres.js';
import { buildService, freePort, httpCall, killService, runService, scratchDir, startService, waitFor, type Running } from '../support/service-process.js';

/**
 * The compiled service with TLS_CERT_FILE and TLS_KEY_FILE: HTTPS itself, HTTP/1.1 and HTTP/2 by
 * ALPN, TLS 1.2 at least, and a renewed certificate taken on SIGHUP without dropping connections.
 */
let main = '';
let database: { url: string; drop: () => Promise<void> };
const started: Running[] = [];

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function h2Connect(port: number, ca: Buffer): Promise<ClientHttp2Session> {
  return new Promise((done, fail) => {
    const session = http2.connect(`https://127.0.0.1:${port}`, { ca });
    session.once('connect', () => done(session));
    session.once('error', fail);
  });
}

function h2Call(session: ClientHttp2Session, call: { method?: string; path: string; body?: unknown; headers?: Record<string, string> }): Promise<Answer> {
  const payload = call.body === undefined ? undefined : JSON.stringify(call.body);
  return new Promise((done, fail) => {
    const stream = session.request({
      ':method': call.method ?? 'GET',
      ':path': call.path,
      ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      ...call.headers,
    });
    let headers: IncomingHttpHeaders = {};
    let body = '';
    stream.setEncoding('utf8');
    stream.on('response', (received) => (headers = received));
    stream.on('data', (chunk: string) => (body += chunk));
    stream.on('end', () => done({ status: Number(headers[':status']), headers, body }));
    stream.on('error', fail);
    stream.end(payload);
  });
}

/** The certificate a new connection is shown, whatever it is (no verification), and the protocol ALPN chose. */
function presented(port: number): Promise<{ fingerprint256: string; alpn: string | false }> {
  return new Promise((done, fail) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      const answer = { fingerprint256: socket.getPeerCertificate().fingerprint256, alpn: socket.alpnProtocol ?? false };
      socket.end();
      done(answer);
    });
    socket.once('error', fail);
  });
}

/** Resolves with the error code of a handshake offering at most `maxVersion`, or 'connected'. */
function handshake(port: number, ca: Buffer, maxVersion: tls.SecureVersion): Promise<string> {
  return new Promise((done) => {
    // SECLEVEL=0 lets this client offer TLS 1.0 and 1.1 at all, so a refusal is the server's.
    const socket = tls.connect({ host: '127.0.0.1', port, ca, minVersion: 'TLSv1', maxVersion, ciphers: 'DEFAULT@SECLEVEL=0' }, () => {
      socket.end();
      done('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message));
  });
}

const count = (text: string, part: string) => text.split(part).length - 1;

function serviceEnv(port: number, files: { certFile: string; keyFile: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: database.url,
    DATA_DIR: scratchDir(),
    LOG_LEVEL: 'warn',
    DB_POOL_SIZE: '3',
    TLS_CERT_FILE: files.certFile,
    TLS_KEY_FILE: files.keyFile,
    ...extra,
  };
}

async function start(env: Record<string, string>, ca: Buffer): Promise<Running> {
  const service = await startService(main, env);
  started.push(service);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = await httpCall(Number(env.PORT), { ca, path: '/health/ready' }).then(
      (answer) => answer.status,
      () => 0,
    );
    if (status === 200) return service;
    if (Date.now() > deadline) throw new Error(`/health/ready over HTTPS still answers ${status}:\n${service.output()}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

beforeAll(async () => {
  main = await buildService();
  database = await createTestDatabase();
}, 180_000);

afterAll(async () => {
  for (const service of started) await killService(service);
  await database?.drop();
});

describe('TLS configuration errors', () => {
  it('stops at start when only one of TLS_CERT_FILE and TLS_KEY_FILE is set', async () => {
    const service = runService(main, { DATA_DIR: scratchDir(), TLS_CERT_FILE: '/etc/dcs/cert.pem' });
    expect(await service.exited).toBe(1);
    expect(service.output()).toContain('Configuration error');
    expect(service.output()).toContain('TLS_CERT_FILE, TLS_KEY_FILE: set both or neither');
  });

  it('stops at start naming a file that cannot be read, and a pair that is not a certificate and its key', async () => {
    const dir = scratchDir();
    const certificate = selfSignedCertificate(dir, 'start');
    const missing = runService(main, { DATA_DIR: dir, TLS_CERT_FILE: certificate.certFile, TLS_KEY_FILE: join(dir, 'absent-key.pem') });
    expect(await missing.exited).toBe(1);
    expect(missing.output()).toContain('Configuration error');
    expect(missing.output()).toContain(`TLS_KEY_FILE: cannot read ${join(dir, 'absent-key.pem')} (ENOENT)`);

    const other = selfSignedCertificate(dir, 'other');
    const mismatched = runService(main, { DATA_DIR: dir, TLS_CERT_FILE: certificate.certFile, TLS_KEY_FILE: other.keyFile });
    expect(await mismatched.exited).toBe(1);
    expect(mismatched.output()).toContain('Configuration error');
    expect(mismatched.output()).toMatch(/TLS_CERT_FILE, TLS_KEY_FILE: .* are not a PEM certificate and its private key/);
  });
});

describe('serving HTTPS with its own certificate', () => {
  const dir = scratchDir();
  const files = { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') };
  const install = (certificate: Certificate) => {
    copyFileSync(certificate.certFile, files.certFile);
    copyFileSync(certificate.keyFile, files.keyFile);
  };
  let first: Certificate;
  /** The certificate the service presents. */
  let serving: Certificate;
  let port: number;
  let service: Running;

  beforeAll(async () => {
    first = selfSignedCertificate(dir, 'first');
    serving = first;
    install(first);
    port = await freePort();
    // The last test sends a request in the SHUTDOWN_DELAY_MS after SIGTERM: 2 s, so that a loaded
    // machine still gets it in (with 500 ms, one run's request came after the listener closed).
    service = await start(serviceEnv(port, files, { SHUTDOWN_DELAY_MS: '2000', ...ADMIN_SETTINGS }), first.pem);
  }, 120_000);

  it('answers over HTTP/1.1 and over HTTP/2, chosen by ALPN', async () => {
    const overHttp1 = await httpCall(port, { ca: first.pem, path: '/health/live' });
    expect(overHttp1).toMatchObject({ status: 200, httpVersion: '1.1' });

    const session = await h2Connect(port, first.pem);
    try {
      expect(session.alpnProtocol).toBe('h2');
      const overHttp2 = await h2Call(session, { path: '/health/live' });
      expect(overHttp2.status).toBe(200);
      expect(JSON.parse(overHttp2.body)).toMatchObject({ status: 'ok' });
      // helmet's headers and the request id come over HTTP/2 too
      expect(overHttp2.headers['x-content-type-options']).toBe('nosniff');
      expect(overHttp2.headers['x-request-id']).toEqual(expect.any(String));
    } finally {
      session.close();
    }
  });

  it('tells browsers to upgrade any http:// request of its pages to https (CSP upgrade-insecure-requests), as it serves TLS itself', async () => {
    for (const path of ['/docs', '/health/live']) {
      const answer = await httpCall(port, { ca: first.pem, path });
      expect(answer.status).toBe(200);
      expect(answer.headers['content-security-policy']).toContain("default-src 'self'");
      expect(answer.headers['content-security-policy']).toContain('upgrade-insecure-requests');
    }
  });

  it('refuses TLS 1.1 and older, accepts TLS 1.2', async () => {
    expect(await handshake(port, first.pem, 'TLSv1.1')).toBe('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
    expect(await handshake(port, first.pem, 'TLSv1')).toBe('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');
    expect(await handshake(port, first.pem, 'TLSv1.2')).toBe('connected');
  });

  it('registers a gateway over HTTP/2, logs it in over HTTP/1.1, and answers its unchanged poll with 304 over HTTP/2', async () => {
    const registration = aRegistration();
    const session = await h2Connect(port, first.pem);
    try {
      const registered = await h2Call(session, { method: 'POST', path: '/api/v1/device/register', body: registration });
      expect(registered.status).toBe(201);
      const { deviceSecret, accessToken } = JSON.parse(registered.body) as Registered;

      const login = await httpCall(port, { ca: first.pem, method: 'POST', path: '/api/v1/device/login', body: { deviceId: registration.deviceId, deviceSecret } });
      expect(login.status).toBe(200);

      const config = await h2Call(session, { path: '/api/v1/device/config', headers: bearer(accessToken) });
      expect(config.status).toBe(200);
      const etag = config.headers.etag as string;
      expect(etag).toEqual(expect.any(String));
      const poll = await h2Call(session, { path: '/api/v1/device/config', headers: { ...bearer(accessToken), 'if-none-match': etag } });
      expect(poll).toMatchObject({ status: 304, body: '' });
      expect(poll.headers.etag).toBe(etag);
    } finally {
      session.close();
    }
  });

  it('serves the dashboard stream over HTTP/2: its head with the hooks’ headers, then a gateway’s record as it is stored', async () => {
    const session = await h2Connect(port, first.pem);
    try {
      const login = await h2Call(session, { method: 'POST', path: '/api/v1/auth/login', body: { email: ADMIN_SETTINGS.ADMIN_EMAIL, password: ADMIN_SETTINGS.ADMIN_PASSWORD } });
      expect(login.status).toBe(200);
      const { accessToken: adminToken } = JSON.parse(login.body) as { accessToken: string };
      const registration = aRegistration();
      const registered = await h2Call(session, { method: 'POST', path: '/api/v1/device/register', body: registration });
      expect(registered.status).toBe(201);
      const { accessToken } = JSON.parse(registered.body) as Registered;

      const live = session.request({ ':path': '/api/v1/dashboard/stream', ...bearer(adminToken) });
      live.setEncoding('utf8');
      let text = '';
      live.on('data', (chunk: string) => (text += chunk));
      const headers = await new Promise<IncomingHttpHeaders>((done) => live.once('response', done));
      expect(headers[':status']).toBe(200);
      expect(headers['content-type']).toMatch(/^text\/event-stream/);
      expect(headers['x-request-id']).toEqual(expect.any(String));
      expect(headers['x-content-type-options']).toBe('nosniff');
      await waitFor(() => text.includes(': connected'), 5000, 'the stream to open');

      const ts = new Date().toISOString();
      const sent = await h2Call(session, { method: 'POST', path: '/api/v1/telemetry', headers: bearer(accessToken), body: { records: [{ ts, batteryId: 'main', metrics: { soc: 64.5 } }] } });
      expect(sent.status).toBe(200);
      await waitFor(() => text.includes(`"deviceId":"${registration.deviceId}"`), 5000, 'the record on the stream');
      expect(text).toContain(`event: telemetry\ndata: {"deviceId":"${registration.deviceId}","batteryId":"main","ts":"${ts}","metrics":{"soc":64.5}}\n\n`);
      live.close();
    } finally {
      session.close();
    }
  });

  it('takes a renewed certificate on SIGHUP for new connections, keeping the open ones; a bad file keeps the previous one', async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const session = await h2Connect(port, first.pem);
    try {
      expect((await httpCall(port, { ca: first.pem, path: '/health/live', agent })).status).toBe(200);
      expect((await h2Call(session, { path: '/health/live' })).status).toBe(200);
      expect((await presented(port)).fingerprint256).toBe(first.fingerprint256);

      const second = selfSignedCertificate(dir, 'second');
      install(second);
      service.child.kill('SIGHUP');
      await waitFor(() => count(service.output(), 'TLS certificate reloaded') === 1, 10_000, 'the reload');
      serving = second;

      // Connections opened before the reload carry on, on the same socket and session.
      const overOldConnection = await httpCall(port, { ca: first.pem, path: '/health/live', agent });
      expect(overOldConnection).toMatchObject({ status: 200, reusedSocket: true });
      expect(session.closed).toBe(false);
      expect((await h2Call(session, { path: '/health/live' })).status).toBe(200);
      // New ones are shown the new certificate, still with ALPN, still TLS 1.2 at least.
      expect(await presented(port)).toEqual({ fingerprint256: second.fingerprint256, alpn: 'h2' });
      expect((await httpCall(port, { ca: second.pem, path: '/health/live' })).status).toBe(200);
      expect(await handshake(port, second.pem, 'TLSv1.1')).toBe('ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION');

      // A certificate file that is not PEM, then a key of another certificate: neither is taken.
      writeFileSync(files.certFile, 'not a certificate\n');
      service.child.kill('SIGHUP');
      await waitFor(() => count(service.output(), 'TLS certificate not reloaded') === 1, 10_000, 'the refused reload');
      expect((await presented(port)).fingerprint256).toBe(second.fingerprint256);

      const third = selfSignedCertificate(dir, 'third');
      copyFileSync(third.certFile, files.certFile);
      service.child.kill('SIGHUP');
      await waitFor(() => count(service.output(), 'TLS certificate not reloaded') === 2, 10_000, 'the second refused reload');
      expect((await presented(port)).fingerprint256).toBe(second.fingerprint256);
      expect((await httpCall(port, { ca: second.pem, path: '/health/ready' })).status).toBe(200);
      const refusals = service.output().split('\n').filter((line) => line.includes('TLS certificate not reloaded'));
      expect(refusals.length).toBeGreaterThan(0);
      for (const line of refusals) expect(line).toContain('TLS_CERT_FILE, TLS_KEY_FILE');
      expect(count(service.output(), 'TLS certificate reloaded')).toBe(1);
      expect(service.child.exitCode).toBeNull();
    } finally {
      agent.destroy();
      session.close();
    }
  }, 60_000);

  it('on SIGTERM sends GOAWAY to HTTP/2 clients instead of Connection: close, and exits with idle sessions and keep-alive connections open', async () => {
    const ca = serving.pem;
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const session = await h2Connect(port, ca);
    const idleSession = await h2Connect(port, ca);
    const goaway = (of: ClientHttp2Session) => new Promise<void>((done) => of.once('goaway', () => done()));
    const goaways = [goaway(session), goaway(idleSession)];
    for (const each of [session, idleSession]) each.on('error', () => undefined);
    expect((await h2Call(session, { path: '/health/live' })).status).toBe(200);
    expect((await h2Call(idleSession, { path: '/health/live' })).status).toBe(200);
    expect((await httpCall(port, { ca, path: '/health/live', agent })).status).toBe(200);

    const stoppedAt = Date.now();
    service.child.kill('SIGTERM');
    await waitFor(() => service.output().includes('Shutting down'), 5000, 'the shutdown to begin');
    const during = await h2Call(session, { path: '/health/live' });
    expect(during.status).toBe(200);
    expect(during.headers.connection).toBeUndefined();
    // The session that was answered during shutdown is told at once; the idle one when the listener closes.
    await Promise.all(goaways);

    // Neither the idle keep-alive connection nor an idle HTTP/2 session holds the exit until the
    // grace period (SHUTDOWN_GRACE_MS, 20 s) is over.
    expect(await service.exited).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    agent.destroy();
    session.destroy();
    idleSession.destroy();
  }, 30_000);
});
