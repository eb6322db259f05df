import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request as a webhook receiver got it, and what the receiver made of it. */
export interface ReceivedWebhook {
  /** Path and query of the request line. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /**
   * `verified` when the standardwebhooks verifier accepted it under the secret trusted for its path,
   * else why not (`no secret for the path`, or the verifier's message).
   */
  verification: string;
  /** The status it was answered with (undefined while the answer is held back). */
  status?: number;
}

/** How the receiver answers: a status, or a status and headers (a redirect's Location). May wait. */
export type WebhookAnswer = number | { status: number; headers?: Record<string, string> };
export type WebhookAnswerer = (request: ReceivedWebhook, nth: number) => WebhookAnswer | Promise<WebhookAnswer>;

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  port: number;
  /** Every request so far, in arrival order. */
  requests: ReceivedWebhook[];
  /** The requests whose path (without the query) is `path`. */
  requestsTo(path: string): ReceivedWebhook[];
  /** TCP connections accepted, whether or not a request followed. */
  connections(): number;
  /** Verifies what arrives on `path` (query ignored) with this secret from now on. */
  trust(path: string, secret: string): void;
  close(): Promise<void>;
}

const pathOnly = (path: string) => path.split('?')[0];

/** The three Standard Webhooks headers, as the verifier takes them. */
export function signatureHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const one = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : (value ?? '');
  };
  return { 'webhook-id': one('webhook-id'), 'webhook-timestamp': one('webhook-timestamp'), 'webhook-signature': one('webhook-signature') };
}

/** The body a delivery carries, after the standardwebhooks verifier accepted it under `secret` (throws otherwise). */
export function verifiedPayload(secret: string, request: Pick<ReceivedWebhook, 'headers' | 'body'>): unknown {
  return new Webhook(secret).verify(request.body, signatureHeaders(request.headers));
}

/**
 * A webhook receiver on 127.0.0.1 (random port) as a customer would run one: it verifies every
 * delivery with the `standardwebhooks` library under the secret trusted for its path, answers 400
 * to one that does not verify, and otherwise what `answer` says (200 by default). `nth` counts the
 * requests to the same path, from 1.
 */
export async function startWebhookReceiver(answer: WebhookAnswerer = () => 200): Promise<WebhookReceiver> {
  const requests: ReceivedWebhook[] = [];
  const secrets = new Map<string, string>();
  let connections = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '';
      const received: ReceivedWebhook = { path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), verification: 'no secret for the path' };
      const secret = secrets.get(pathOnly(path));
      if (secret !== undefined) {
        try {
          verifiedPayload(secret, received);
          received.verification = 'verified';
        } catch (error) {
          received.verification = (error as Error).message;
        }
      }
      requests.push(received);
      const nth = requests.filter((each) => pathOnly(each.path) === pathOnly(path)).length;
      void (async () => {
        const decided = received.verification === 'verified' || secret === undefined ? await answer(received, nth) : 400;
        const { status, headers } = typeof decided === 'number' ? { status: decided, headers: {} } : { headers: {}, ...decided };
        received.status = status;
        response.writeHead(status, headers).end();
      })();
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    requestsTo: (path) => requests.filter((each) => pathOnly(each.path) === path),
    connections: () => connections,
    trust: (path, secret) => void secrets.set(path, secret),
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
