import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../domain-error.js';

/** The largest body any route accepts (telemetry batches); routes say their own with @RouteConfig({ bodyLimit }). */
export const MAX_ROUTE_BODY_BYTES = 1024 * 1024;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * JSON bodies: invalid UTF-8 and bodies over the route's limit are refused before parsing, and
 * parsing rejects __proto__ / constructor.prototype keys (Fastify's secure JSON parser).
 */
export function useJsonBodyParser(app: NestFastifyApplication, defaultLimit: number): void {
  const fastify = app.getHttpAdapter().getInstance();
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  app.useBodyParser('application/json', { bodyLimit: Math.max(defaultLimit, MAX_ROUTE_BODY_BYTES) }, (request, body, done) => {
    const routeLimit = (request as FastifyRequest).routeOptions?.config as { bodyLimit?: number } | undefined;
    if (body.length > (routeLimit?.bodyLimit ?? defaultLimit)) {
      done(new DomainError('PAYLOAD_TOO_LARGE', 'too-large', 'The request body exceeds the size limit of this route.'), undefined);
      return;
    }
    let text: string;
    try {
      text = strictUtf8.decode(body);
    } catch {
      done(new DomainError('MALFORMED_BODY', 'invalid', 'The request body is not valid UTF-8.'), undefined);
      return;
    }
    void parseJson(request as FastifyRequest, text, done);
  });
}
