import type { Http2SecureServer, Http2ServerRequest, Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../domain-error.js';

/** The probes answer for themselves during shutdown: readiness says 503, liveness stays 200. */
const PROBES = new Set(['/health/live', '/health/ready']);

/**
 * From the moment shutdown begins every answer carries `Connection: close` (on HTTP/2: GOAWAY), so
 * clients open their next connection elsewhere and no keep-alive connection holds the exit. Until
 * the listener closes (SHUTDOWN_DELAY_MS) requests are served as usual; a request that still
 * arrives on an open connection after that is refused with 503 SERVICE_UNAVAILABLE and
 * Retry-After, and the client sends it again to another instance. Requests already in flight run
 * to their end either way. Added before Nest's middleware, like the 304 shortcut, so a refusal
 * costs nothing.
 */
export function installShutdownGate(fastify: FastifyInstance, shuttingDown: () => boolean): void {
  // Callback hooks, not async ones: they run on every request, and cost no promise each that way.
  fastify.addHook('onRequest', (request, reply, done) => {
    if (!shuttingDown()) return done();
    if (!isHttp2(request)) reply.header('connection', 'close');
    if (fastify.server.listening || PROBES.has(request.url.split('?')[0])) return done();
    done(new DomainError('SERVICE_UNAVAILABLE', 'unavailable', 'The service is shutting down. Send the request again.', { retryAfterSec: 1 }));
  });
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (shuttingDown() && !isHttp2(request)) reply.header('connection', 'close');
    done(null, payload);
  });
  // HTTP/2 forbids the Connection header; its way to say the same is GOAWAY, which session.close()
  // sends: streams in flight finish, the client opens its next ones on a new connection.
  fastify.addHook('onResponse', (request, _reply, done) => {
    if (shuttingDown() && isHttp2(request)) (request.raw as unknown as Http2ServerRequest).stream.session?.close();
    done();
  });
}

function isHttp2(request: FastifyRequest): boolean {
  return request.raw.httpVersionMajor === 2;
}

/**
 * For the HTTP/2 server of HTTPS (configure-app.ts). Before Node 24 it leaves its sessions open
 * when it closes, so closing the service would wait for every client to hang up: on close each
 * session gets GOAWAY and ends once its streams in flight are done. It has no
 * closeAllConnections either, which main.ts calls when the shutdown grace period is over: this
 * one destroys every connection, HTTP/2 and HTTP/1.1 alike.
 */
export function closeHttp2ConnectionsOnShutdown(fastify: FastifyInstance): void {
  const server = fastify.server as unknown as Http2SecureServer & { closeAllConnections?: () => void };
  const sessions = new Set<Http2Session>();
  const sockets = new Set<Socket>();
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  fastify.addHook('preClose', async () => {
    for (const session of sessions) session.close();
  });
  server.closeAllConnections ??= () => {
    for (const socket of sockets) socket.destroy();
  };
}
