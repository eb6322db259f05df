import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from 'nestjs-pino';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type PinoPretty from 'pino-pretty';
import type { Env } from '../config/env.js';

const REQUEST_ID_HEADER = 'x-request-id';
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{8,64}$/;

/**
 * Fastify's request id: the caller's X-Request-Id when it is a plain token, else a new UUID.
 * Written back to the raw headers so the pino-http logger sees the same id.
 */
export function requestIdOf(request: IncomingMessage): string {
  const offered = request.headers[REQUEST_ID_HEADER];
  const id = typeof offered === 'string' && SAFE_REQUEST_ID.test(offered) ? offered : randomUUID();
  request.headers[REQUEST_ID_HEADER] = id;
  return id;
}

/** The error pino-http makes up for a 5xx answer that had none. */
const isSyntheticError = (error: Error, response: ServerResponse): boolean => error.message === `failed with status code ${response.statusCode}`;

type PinoHttpOptions = Exclude<NonNullable<Params['pinoHttp']>, DestinationStream | unknown[]>;

function pathOnly(url: string | undefined): string {
  return (url ?? '').split('?')[0].slice(0, 256);
}

/** Whether log lines are for people (coloured, one line each) or for machines (JSON). */
export function logFormat(env: Env, stdoutIsTerminal = process.stdout.isTTY === true): 'json' | 'pretty' {
  if (env.LOG_FORMAT !== 'auto') return env.LOG_FORMAT;
  return env.NODE_ENV === 'development' && stdoutIsTerminal ? 'pretty' : 'json';
}

/**
 * Where lines go: stdout as JSON, or through pino-pretty (in process, synchronous: no worker
 * thread) with the same fields. Every logger of the process uses this, so there is one format.
 */
function logStream(env: Env): DestinationStream | undefined {
  if (logFormat(env) === 'json') return undefined;
  // Loaded only here: JSON logging (production, tests, the bench) never carries pino-pretty's code.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,context', messageFormat: '{if context}[{context}] {end}{msg}' });
}

/**
 * The logger of what happens outside a request and before the application exists (start-up,
 * shutdown, certificate reloads): the same format and fields as the application's own lines.
 * `level` overrides LOG_LEVEL for lines that must always be written (EVENT_LOOP_LOG_MS).
 */
export function processLogger(env: Env, level: string = env.LOG_LEVEL): PinoLogger {
  const stream = logStream(env);
  const options = { level, base: { pid: process.pid, hostname: hostname(), context: 'Main' } };
  return stream ? pino(options, stream) : pino(options);
}

/**
 * Request logs name the route, status and timing only. Headers (Authorization), bodies (secrets,
 * claim codes, passwords) and query strings never reach a log line. Lines go to stdout unless a
 * destination is given (the e2e tests capture them to scan for leaked secrets).
 */
export function loggerOptions(env: Env, destination?: DestinationStream): Params {
  const options: PinoHttpOptions = {
    level: env.LOG_LEVEL,
    genReqId: (request: IncomingMessage) => String(request.headers[REQUEST_ID_HEADER] ?? randomUUID()),
    customProps: () => ({}),
    serializers: {
      req: (request: IncomingMessage & { id?: string; raw?: IncomingMessage }) => ({
        id: request.id,
        method: request.method,
        path: pathOnly(request.url),
      }),
      res: (response: ServerResponse) => ({ statusCode: response.statusCode }),
      // Some call sites log `{ err: error.message }`: a string must not make the logger throw.
      err: (error: unknown) =>
        error instanceof Object
          ? { type: (error as Error).name, message: String((error as Error).message ?? '').slice(0, 300), code: (error as { code?: unknown }).code }
          : { message: String(error).slice(0, 300) },
    },
    redact: { paths: ['req.headers', 'res.headers', 'req.body', '*.password', '*.deviceSecret', '*.claimCode', '*.refreshToken', '*.accessToken', '*.token', '*.ticket'], remove: true },
    // A 503 is an expected fault (database outage, drain), logged once as such elsewhere: its request
    // lines are warnings. Other 5xx are bugs. pino-http invents an error for every 5xx; a 503 has none.
    customLogLevel: (_request: IncomingMessage, response: ServerResponse, error?: Error) =>
      response.statusCode === 503 ? 'warn' : error || response.statusCode >= 500 ? 'error' : 'info',
    customErrorObject: (_request: IncomingMessage, response: ServerResponse, error: Error, value: Record<string, unknown>) =>
      response.statusCode === 503 && isSyntheticError(error, response) ? { ...value, err: undefined } : value,
    customErrorMessage: (_request: IncomingMessage, response: ServerResponse, error: Error) =>
      response.statusCode === 503 && isSyntheticError(error, response) ? 'request completed' : 'request errored',
    autoLogging: { ignore: (request: IncomingMessage) => (request.url ?? '').startsWith('/health/') },
  };
  const stream = destination ?? logStream(env);
  return { pinoHttp: stream ? [options, stream] : options };
}
