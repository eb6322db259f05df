import type { FastifyInstance } from 'fastify';
import { DomainError } from '../domain-error.js';

/** The probes answer for themselves during shutdown: readiness says 503, liveness stays 200. */
const PROBES = new Set(['/health/live', '/health/ready']);

/**
 * From the moment shutdown begins every answer carries `Connection: close`, so clients open their
 * next connection elsewhere and no keep-alive connection holds the exit. Until the listener closes
 * (SHUTDOWN_DELAY_MS) requests are served as usual; a request that still arrives on an open
 * connection after that is refused with 503 SERVICE_UNAVAILABLE and Retry-After, and the client
 * sends it again to another instance. Requests already in flight run to their end either way.
 * Added before Nest's middleware, like the 304 shortcut, so a refusal costs nothing.
 */
export function installShutdownGate(fastify: FastifyInstance, shuttingDown: () => boolean): void {
  fastify.addHook('onRequest', async (request, reply) => {
    if (!shuttingDown()) return;
    reply.header('connection', 'close');
    if (fastify.server.listening || PROBES.has(request.url.split('?')[0])) return;
    throw new DomainError('SERVICE_UNAVAILABLE', 'unavailable', 'The service is shutting down. Send the request again.', { retryAfterSec: 1 });
  });
  fastify.addHook('onSend', async (_request, reply, payload) => {
    if (shuttingDown()) reply.header('connection', 'close');
    return payload;
  });
}
