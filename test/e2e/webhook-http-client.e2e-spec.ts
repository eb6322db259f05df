import type { LookupAddress } from 'node:dns';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { newWebhookSecret, signWebhook, WebhookHttpClient, type ResolveHost } from '../../src/modules/notifications/infrastructure/webhook-http-client.js';
import { selfSignedCertificate } from '../support/certificates.js';
import { eventually } from '../support/eventually.js';

/**
 * The webhook sender against local receivers on 127.0.0.1: what a receiver gets, how answers map
 * to attempts, and the server-side request forgery guards (no database, no app).
 */
interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  port: number;
  requests: ReceivedRequest[];
  /** The client port of each TCP connection accepted (whether or not a request followed), in order. */
  accepted: number[];
  close(): Promise<void>;
}

type Handler = (request: ReceivedRequest, response: ServerResponse) => void;

const open: Receiver[] = [];

async function listen(server: http.Server, handler: Handler): Promise<Receiver> {
  const receiver: Receiver = {
    port: 0,
    requests: [],
    accepted: [],
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
  server.on('connection', (socket: net.Socket) => receiver.accepted.push(socket.remotePort ?? 0));
  server.on('request', (request: http.IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      receiver.requests.push(received);
      handler(received, response);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  receiver.port = (server.address() as AddressInfo).port;
  open.push(receiver);
  return receiver;
}

const receiver = (handler: Handler) => listen(http.createServer(), handler);
const answer = (status: number, headers: Record<string, string> = {}) => (_request: ReceivedRequest, response: ServerResponse) => response.writeHead(status, headers).end();

/** A fake resolver, counting its calls; each call takes the next answer, the last one repeating. */
function fakeDns(...answers: LookupAddress[][]): ResolveHost & { calls: string[] } {
  const calls: string[] = [];
  return Object.assign(
    (hostname: string) => {
      calls.push(hostname);
      return Promise.resolve(answers[Math.min(calls.length, answers.length) - 1]);
    },
    { calls },
  );
}

const v4 = (address: string): LookupAddress => ({ address, family: 4 });
const v6 = (address: string): LookupAddress => ({ address, family: 6 });

/**
 * How many connections the receiver accepted before one the test opens now: a connection the
 * client opened earlier waits in the same listening queue ahead of it.
 */
async function connectionsBeforeNow(hook: Receiver): Promise<number> {
  const probe = net.connect(hook.port, '127.0.0.1');
  await once(probe, 'connect');
  const port = probe.localPort!;
  await eventually(() => expect(hook.accepted).toContain(port));
  probe.destroy();
  return hook.accepted.indexOf(port);
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((each) => each.close()));
});

describe('WebhookHttpClient with private targets allowed', () => {
  const client = new WebhookHttpClient({ allowPrivateTargets: true });

  it('delivers the body and Standard Webhooks headers that the standardwebhooks verifier accepts', async () => {
    const hook = await receiver(answer(200));
    const secret = newWebhookSecret();
    const payload = JSON.stringify({ type: 'device.offline', timestamp: new Date().toISOString(), data: { deviceId: 'gw-1' } });
    const headers = signWebhook(secret, 'msg_2Yx1', new Date(), payload);

    const attempt = await client.post(`http://127.0.0.1:${hook.port}/hooks/in?token=abc`, headers, payload);

    expect(attempt).toEqual({ ok: true, status: 200 });
    expect(hook.requests).toHaveLength(1);
    const [delivered] = hook.requests;
    expect(delivered).toEqual(expect.objectContaining({ method: 'POST', url: '/hooks/in?token=abc', body: payload }));
    expect(delivered.headers).toEqual(
      expect.objectContaining({
        host: `127.0.0.1:${hook.port}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(payload)),
        'webhook-id': 'msg_2Yx1',
        'webhook-timestamp': expect.stringMatching(/^\d{10}$/),
        'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
      }),
    );
    const verifiable = delivered.headers as Record<string, string>;
    expect(new Webhook(secret).verify(delivered.body, verifiable)).toEqual(JSON.parse(payload));
    expect(() => new Webhook(newWebhookSecret()).verify(delivered.body, verifiable)).toThrow(WebhookVerificationError);
  });

  it('makes secrets of 32 random bytes in the whsec_ format', () => {
    const secrets = [newWebhookSecret(), newWebhookSecret()];

    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    }
    expect(secrets[0]).not.toBe(secrets[1]);
  });

  it('counts any 2xx as delivered', async () => {
    const hook = await receiver(answer(204));

    await expect(client.post(`http://127.0.0.1:${hook.port}/`, {}, '{}')).resolves.toEqual({ ok: true, status: 204 });
  });

  it.each([500, 404, 429])('reports a %i answer as HTTP_<status>', async (status) => {
    const hook = await receiver(answer(status));

    await expect(client.post(`http://127.0.0.1:${hook.port}/`, {}, '{}')).resolves.toEqual({ ok: false, status, errorCode: `HTTP_${status}` });
  });

  it('gives up on a receiver that never answers at the timeout, and drops the connection', async () => {
    const closed: Promise<void>[] = [];
    const hook = await receiver((_request, response) => closed.push(new Promise((done) => response.on('close', done))));
    const impatient = new WebhookHttpClient({ allowPrivateTargets: true, timeoutMs: 300 });
    const started = performance.now();

    const attempt = await impatient.post(`http://127.0.0.1:${hook.port}/`, {}, '{}');

    const elapsed = performance.now() - started;
    expect(attempt).toEqual({ ok: false, errorCode: 'TIMEOUT' });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1500);
    expect(hook.requests).toHaveLength(1);
    await Promise.all(closed);
  });

  it('does not follow a redirect: the server it points to receives nothing', async () => {
    const elsewhere = await receiver(answer(200));
    const hook = await receiver(answer(302, { location: `http://127.0.0.1:${elsewhere.port}/internal` }));

    const attempt = await client.post(`http://127.0.0.1:${hook.port}/`, {}, '{}');

    expect(attempt).toEqual({ ok: false, status: 302, errorCode: 'REDIRECT_NOT_FOLLOWED' });
    expect(hook.requests).toHaveLength(1);
    expect(await connectionsBeforeNow(elsewhere)).toBe(0);
  });

  it('reads at most about 64 KiB of a huge answer, then drops the connection', async () => {
    const total = 10 * 1024 * 1024;
    const chunk = Buffer.alloc(16 * 1024, 'x');
    let written = 0;
    let finished = false;
    let closed!: Promise<void>;
    const hook = await receiver((_request, response) => {
      closed = new Promise((done) => response.on('close', done));
      response.on('finish', () => (finished = true));
      response.on('error', () => {});
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
      const pump = () => {
        while (written < total && !response.destroyed) {
          written += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pump);
        }
        response.end();
      };
      pump();
    });
    const started = performance.now();

    const attempt = await client.post(`http://127.0.0.1:${hook.port}/`, {}, '{}');

    expect(attempt).toEqual({ ok: true, status: 200 });
    expect(performance.now() - started).toBeLessThan(1000);
    await closed;
    expect(finished).toBe(false);
    expect(written).toBeLessThan(total);
  });

  it('reports a refused connection', async () => {
    const gone = await receiver(answer(200));
    await gone.close();

    await expect(client.post(`http://127.0.0.1:${gone.port}/`, {}, '{}')).resolves.toEqual({ ok: false, errorCode: 'CONNECT_REFUSED' });
  });

  it('resolves once and connects to the address it resolved, whatever DNS answers next (no rebinding)', async () => {
    const hook = await receiver(answer(200));
    // 192.0.2.1 (documentation range) answers nothing: reaching the receiver proves the first answer was used.
    const dns = fakeDns([v4('127.0.0.1')], [v4('192.0.2.1')]);
    const pinned = new WebhookHttpClient({ allowPrivateTargets: true, lookup: dns, timeoutMs: 2000 });

    const attempt = await pinned.post(`http://hooks.rebind.test:${hook.port}/in`, {}, '{}');

    expect(attempt).toEqual({ ok: true, status: 200 });
    expect(dns.calls).toEqual(['hooks.rebind.test']);
    expect(hook.requests).toEqual([expect.objectContaining({ url: '/in', headers: expect.objectContaining({ host: `hooks.rebind.test:${hook.port}` }) })]);
  });

  it('reports a name that does not resolve', async () => {
    const nowhere: ResolveHost = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }));
    const empty = fakeDns([]);

    await expect(new WebhookHttpClient({ allowPrivateTargets: true, lookup: nowhere }).post('http://hooks.example.test/', {}, '{}')).resolves.toEqual({ ok: false, errorCode: 'DNS_FAILED' });
    await expect(new WebhookHttpClient({ allowPrivateTargets: true, lookup: empty }).post('http://hooks.example.test/', {}, '{}')).resolves.toEqual({ ok: false, errorCode: 'DNS_FAILED' });
  });

  it('counts a DNS lookup that hangs against the timeout', async () => {
    const hanging: ResolveHost = () => new Promise(() => {});
    const client = new WebhookHttpClient({ allowPrivateTargets: true, lookup: hanging, timeoutMs: 200 });

    await expect(client.post('http://hooks.example.test/', {}, '{}')).resolves.toEqual({ ok: false, errorCode: 'TIMEOUT' });
  });

  describe('over TLS', () => {
    let dir = '';
    beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'dcs-webhook-tls-'))));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('names the registered host in SNI and refuses a certificate it cannot verify', async () => {
      const certificate = selfSignedCertificate(dir, 'webhook-receiver');
      const servernames: string[] = [];
      const server = https.createServer({
        cert: readFileSync(certificate.certFile),
        key: readFileSync(certificate.keyFile),
        SNICallback: (servername, done) => {
          servernames.push(servername);
          done(null, undefined);
        },
      });
      const hook = await listen(server, answer(200));
      const tlsClient = new WebhookHttpClient({ allowPrivateTargets: true, lookup: fakeDns([v4('127.0.0.1')]) });

      const attempt = await tlsClient.post(`https://hooks.tls.test:${hook.port}/`, {}, '{}');

      expect(attempt).toEqual({ ok: false, errorCode: 'TLS_FAILED' });
      expect(servernames).toEqual(['hooks.tls.test']);
      expect(hook.requests).toEqual([]);
    });

    it('reports a TLS failure when the receiver speaks plain HTTP', async () => {
      const hook = await receiver(answer(200));

      await expect(client.post(`https://127.0.0.1:${hook.port}/`, {}, '{}')).resolves.toEqual({ ok: false, errorCode: 'TLS_FAILED' });
      expect(hook.requests).toEqual([]);
    });
  });
});

describe('WebhookHttpClient with private targets refused', () => {
  const client = new WebhookHttpClient({ allowPrivateTargets: false });

  it('refuses a plain http URL without connecting', async () => {
    const hook = await receiver(answer(200));

    const attempt = await client.post(`http://127.0.0.1:${hook.port}/`, {}, '{}');

    expect(attempt).toEqual({ ok: false, errorCode: 'URL_NOT_ALLOWED' });
    expect(await connectionsBeforeNow(hook)).toBe(0);
  });

  it('refuses a URL with a user and password', async () => {
    await expect(client.post('https://user:pass@hooks.example.test/', {}, '{}')).resolves.toEqual({ ok: false, errorCode: 'URL_NOT_ALLOWED' });
  });

  it.each([
    ['loopback', (port: number) => `https://127.0.0.1:${port}/`],
    ['localhost, which resolves to loopback', (port: number) => `https://localhost:${port}/`],
    ['IPv4-mapped loopback', (port: number) => `https://[::ffff:127.0.0.1]:${port}/`],
    ['a private address', () => 'https://10.0.0.1/'],
    ['the cloud metadata address', () => 'https://169.254.169.254/latest/meta-data/'],
    ['IPv6 loopback', () => 'https://[::1]/'],
  ])('refuses %s without connecting', async (_case, url) => {
    const hook = await receiver(answer(200));

    const attempt = await client.post(url(hook.port), {}, '{}');

    expect(attempt).toEqual({ ok: false, errorCode: 'PRIVATE_ADDRESS' });
    expect(await connectionsBeforeNow(hook)).toBe(0);
  });

  it.each([
    ['a private IPv4 address after a public one', [v4('93.184.215.14'), v4('127.0.0.1')]],
    ['a private IPv4 address before a public one', [v4('10.1.2.3'), v4('93.184.215.14')]],
    ['a unique-local IPv6 address', [v6('2606:4700:4700::1111'), v6('fd00::1')]],
    ['the metadata address behind NAT64', [v6('64:ff9b::a9fe:a9fe')]],
  ])('refuses a name that resolves to %s, without connecting', async (_case, answers) => {
    const hook = await receiver(answer(200));
    const dns = fakeDns(answers);
    const guarded = new WebhookHttpClient({ allowPrivateTargets: false, lookup: dns });

    const attempt = await guarded.post(`https://hooks.example.test:${hook.port}/`, {}, '{}');

    expect(attempt).toEqual({ ok: false, errorCode: 'PRIVATE_ADDRESS' });
    expect(dns.calls).toEqual(['hooks.example.test']);
    expect(await connectionsBeforeNow(hook)).toBe(0);
  });
});
