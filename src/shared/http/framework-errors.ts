import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PROBLEM_TITLES, problemType } from '../problem-types.js';

/**
 * Fastify's router refuses a path before any hook or Nest filter runs: a path parameter that is
 * not valid percent-encoded UTF-8 (%FF, %C3%28, a lone %) and one longer than maxParamLength.
 * Its own answer is a plain JSON object; this one is the problem document every other error is.
 */
export function frameworkErrors(error: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply): void {
  const [status, code, detail] =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? [414, 'VALIDATION_FAILED', 'A path parameter is longer than allowed.']
      : error.code === 'FST_ERR_BAD_URL'
        ? [400, 'VALIDATION_FAILED', 'The request path is not valid percent-encoded UTF-8.']
        : [500, 'INTERNAL_ERROR', `An unexpected error occurred. Quote request id ${request.id} when reporting it.`];
  if (status === 500) request.log.error({ err: error }, 'Router error');
  void reply
    .code(status)
    .header('x-request-id', request.id)
    .header('content-type', 'application/problem+json; charset=utf-8')
    .send({
      type: problemType(code),
      title: PROBLEM_TITLES[code],
      status,
      detail,
      instance: (request.url ?? '').split('?')[0],
      code,
      requestId: String(request.id),
    });
}

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'The request was not sent completely in time.'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'The request line and headers exceed the size limit.'],
};

/**
 * Node refuses a request it cannot parse (headers too large, a malformed request line, a client
 * too slow) before Fastify sees it; the answer is written straight to the socket, which closes.
 * The same answers as Fastify's default handler, as problem documents.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, detail] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'Bad Request', 'The request is not well-formed HTTP.'];
  const requestId = randomUUID();
  const body = JSON.stringify({
    type: problemType('VALIDATION_FAILED'),
    title: PROBLEM_TITLES.VALIDATION_FAILED,
    status,
    detail,
    instance: '/',
    code: 'VALIDATION_FAILED',
    requestId,
  });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/problem+json; charset=utf-8\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
