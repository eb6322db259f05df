import { randomBytes } from 'node:crypto';
import { promises as dns, type LookupAddress } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import { isPublicAddress, WebhookTarget, WebhookUrlNotAllowedError } from '../domain/webhook-target.js';

import type { WebhookAttempt } from '../domain/webhook-transport.js';

export type { WebhookAttempt } from '../domain/webhook-transport.js';

/** `dns.promises.lookup` with `all: true`; a seam so tests can answer for DNS. */
export type ResolveHost = (hostname: string, options: { all: true }) => Promise<LookupAddress[]>;

export interface WebhookHttpClientOptions {
  /** Development and tests only: also `http:` and loopback, private and other non-public addresses. */
  allowPrivateTargets: boolean;
  /** Whole attempt: DNS, connect, TLS, request and answer. */
  timeoutMs?: number;
  /** Of the answer's body; the rest is not read. */
  maxResponseBytes?: number;
  lookup?: ResolveHost;
}

const failed = (errorCode: string, status?: number): WebhookAttempt => (status === undefined ? { ok: false, errorCode } : { ok: false, status, errorCode });

function verdict(status: number): WebhookAttempt {
  if (status >= 200 && status < 300) return { ok: true, status };
  // Following a redirect would let a public receiver send us on to an internal address.
  if (status >= 300 && status < 400) return failed('REDIRECT_NOT_FOLLOWED', status);
  return failed(`HTTP_${status}`, status);
}

const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'CONNECT_REFUSED',
  ECONNRESET: 'CONNECTION_RESET',
  EPIPE: 'CONNECTION_RESET',
  ETIMEDOUT: 'TIMEOUT',
  EHOSTUNREACH: 'HOST_UNREACHABLE',
  ENETUNREACH: 'HOST_UNREACHABLE',
};

/** OpenSSL's certificate verification codes and Node's TLS and SSL errors. */
const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|EPROTO$)|CERT|ISSUER|SIGNATURE|HOSTNAME_MISMATCH/;

function errorCodeOf(error: NodeJS.ErrnoException): string {
  const code = error.code ?? '';
  if (SOCKET_ERRORS[code]) return SOCKET_ERRORS[code];
  if (code.startsWith('HPE_')) return 'INVALID_RESPONSE';
  if (TLS_ERROR.test(code)) return 'TLS_FAILED';
  return 'CONNECTION_FAILED';
}

/** Settles with `promise`, or rejects once `deadline` fires, whichever comes first. */
function beforeDeadline<T>(promise: Promise<T>, deadline: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(deadline.reason);
    if (deadline.aborted) return onAbort();
    deadline.addEventListener('abort', onAbort, { once: true });
    void promise.then(resolve, reject).finally(() => deadline.removeEventListener('abort', onAbort));
  });
}

/**
 * Sends one webhook request, guarded against server-side request forgery: the URL is checked
 * again (it may have been registered under other settings), every address the name resolves to
 * must be public, and the connection goes to the address that was checked. Never returns or logs
 * the answer's body or the URL.
 */
export class WebhookHttpClient {
  private readonly allowPrivateTargets: boolean;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly lookup: ResolveHost;

  constructor(options: WebhookHttpClientOptions) {
    this.allowPrivateTargets = options.allowPrivateTargets;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.maxResponseBytes = options.maxResponseBytes ?? 65_536;
    this.lookup = options.lookup ?? ((hostname, lookupOptions) => dns.lookup(hostname, lookupOptions));
  }

  async post(url: string, headers: Record<string, string>, body: string): Promise<WebhookAttempt> {
    let target: WebhookTarget;
    try {
      target = WebhookTarget.parse(url, { allowPrivateTargets: this.allowPrivateTargets });
    } catch (error) {
      if (error instanceof WebhookUrlNotAllowedError) return failed(error.reason === 'private-address' ? 'PRIVATE_ADDRESS' : 'URL_NOT_ALLOWED');
      throw error;
    }

    const deadline = AbortSignal.timeout(this.timeoutMs);
    let address: string;
    if (target.isIpLiteral) {
      address = target.hostname;
    } else {
      let addresses: LookupAddress[];
      try {
        addresses = await beforeDeadline(this.lookup(target.hostname, { all: true }), deadline);
      } catch {
        return failed(deadline.aborted ? 'TIMEOUT' : 'DNS_FAILED');
      }
      if (addresses.length === 0) return failed('DNS_FAILED');
      // One private answer among public ones is enough to refuse: which one a resolver hands out
      // next is up to whoever controls the name.
      if (!this.allowPrivateTargets && !addresses.every((answer) => isPublicAddress(answer.address))) return failed('PRIVATE_ADDRESS');
      address = addresses[0].address;
    }
    return this.send(target, address, headers, body, deadline);
  }

  private send(target: WebhookTarget, address: string, headers: Record<string, string>, body: string, deadline: AbortSignal): Promise<WebhookAttempt> {
    const payload = Buffer.from(body, 'utf8');
    const options: https.RequestOptions = {
      method: 'POST',
      // The checked address itself, so no second lookup can answer differently (DNS rebinding).
      host: address,
      port: target.port,
      path: target.path,
      headers: { ...headers, host: target.hostHeader, 'content-length': String(payload.length) },
      // A fresh connection each time, and none of Node's proxy-from-environment handling.
      agent: false,
      signal: deadline,
    };
    // SNI and the certificate check name the registered host, not the address dialled. An IP
    // literal is sent no SNI (RFC 6066) and its certificate is checked against the address.
    if (!target.isIpLiteral) options.servername = target.hostname.replace(/\.$/, '');

    return new Promise((resolve) => {
      const request = (target.protocol === 'https:' ? https : http).request(options);
      let status: number | undefined;
      let settled = false;
      const settle = (attempt: WebhookAttempt) => {
        if (settled) return;
        settled = true;
        request.destroy();
        resolve(attempt);
      };
      // Once the status line is in, it decides the outcome, whatever happens to the rest.
      const onFailure = (error: NodeJS.ErrnoException) => {
        if (status !== undefined) settle(verdict(status));
        else settle(failed(deadline.aborted ? 'TIMEOUT' : errorCodeOf(error)));
      };

      request.on('response', (response: IncomingMessage) => {
        status = response.statusCode ?? 0;
        const answered = verdict(status);
        response.on('error', onFailure);
        if (!answered.ok) return settle(answered);
        // The body is only drained, never kept; past the limit the connection is dropped.
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received >= this.maxResponseBytes) settle(answered);
        });
        response.on('end', () => settle(answered));
      });
      request.on('error', onFailure);
      request.on('close', () => settle(status === undefined ? failed('CONNECTION_CLOSED') : verdict(status)));
      request.end(payload);
    });
  }
}

/**
 * Standard Webhooks headers for one message. `msgId` stays the same across retries of the same
 * event, so receivers can drop duplicates.
 */
export function signWebhook(secret: string, msgId: string, timestamp: Date, payload: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(msgId, timestamp, payload),
  };
}

/** A new signing secret in the Standard Webhooks format: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
