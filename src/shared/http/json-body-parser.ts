import { gunzip } from 'node:zlib';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../domain-error.js';

/** The largest body any route accepts (telemetry batches); routes say their own with @RouteConfig({ bodyLimit }). */
export const MAX_ROUTE_BODY_BYTES = 1024 * 1024;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** A body in a content coding the service does not decode: 415 with `Accept-Encoding: gzip` (RFC 9110 §15.5.16). */
export class UnsupportedContentEncodingError extends DomainError {
  constructor(coding: string) {
    super('UNSUPPORTED_MEDIA_TYPE', 'unsupported-media-type', `Content-Encoding ${JSON.stringify(coding.slice(0, 40))} is not supported: send the body as it is, or gzip-compressed.`);
  }
}

/** The codings of a request body, outermost last; `identity` means none. */
function codingsOf(request: FastifyRequest): string[] {
  const header = request.headers['content-encoding'];
  if (header === undefined) return [];
  return String(header).split(',').map((coding) => coding.trim().toLowerCase()).filter((coding) => coding !== '' && coding !== 'identity');
}

const isGzip = (coding: string) => coding === 'gzip' || coding === 'x-gzip';

/**
 * Request bodies may be gzip-compressed (one layer): a gateway on a metered link sends a 50-record
 * batch in about an eighth of the bytes (telemetry-gzip.e2e-spec.ts: 6,949 → 837). Any other coding is refused before the body is read.
 */
export function bodyEncodingError(request: FastifyRequest): DomainError | undefined {
  const codings = codingsOf(request);
  if (codings.length === 0 || (codings.length === 1 && isGzip(codings[0]))) return undefined;
  return new UnsupportedContentEncodingError(codings.join(', '));
}

/** Decompresses a gzip body, never to more than `limit` bytes (a small body may inflate a thousandfold). */
function decode(request: FastifyRequest, body: Buffer, limit: number, done: (error: DomainError | null, body?: Buffer) => void): void {
  if (codingsOf(request).length === 0) {
    done(null, body);
    return;
  }
  gunzip(body, { maxOutputLength: limit }, (error, inflated) => {
    if (!error) done(null, inflated);
    else if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') done(new DomainError('PAYLOAD_TOO_LARGE', 'too-large', 'The request body, decompressed, exceeds the size limit of this route.'));
    else done(new DomainError('MALFORMED_BODY', 'invalid', 'The request body is not valid gzip.'));
  });
}

/**
 * JSON bodies, plain or gzip-compressed: invalid UTF-8 and bodies over the route's limit (sent and
 * decompressed) are refused before parsing, and parsing rejects __proto__ / constructor.prototype
 * keys (Fastify's secure JSON parser).
 */
export function useJsonBodyParser(app: NestFastifyApplication, defaultLimit: number): void {
  const fastify = app.getHttpAdapter().getInstance();
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  app.useBodyParser('application/json', { bodyLimit: Math.max(defaultLimit, MAX_ROUTE_BODY_BYTES) }, (request, body, done) => {
    const routeConfig = (request as FastifyRequest).routeOptions?.config as { bodyLimit?: number } | undefined;
    const limit = routeConfig?.bodyLimit ?? defaultLimit;
    if (body.length > limit) {
      done(new DomainError('PAYLOAD_TOO_LARGE', 'too-large', 'The request body exceeds the size limit of this route.'), undefined);
      return;
    }
    decode(request as FastifyRequest, body, limit, (error, decoded) => {
      if (error) {
        done(error, undefined);
        return;
      }
      let text: string;
      try {
        text = strictUtf8.decode(decoded);
      } catch {
        done(new DomainError('MALFORMED_BODY', 'invalid', 'The request body is not valid UTF-8.'), undefined);
        return;
      }
      void parseJson(request as FastifyRequest, text, done);
    });
  });
}
