import type { Http2SecureServer } from 'node:http2';
import { RequestMethod } from '@nestjs/common';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import helmet from 'helmet';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { webhookDocumentation } from './modules/notifications/index.js';
import { Logger } from 'nestjs-pino';
import { AppModule, type AppSettings } from './app.module.js';
import type { Env } from './config/env.js';
import { secureContextOptions, type TlsCredentials } from './config/tls.js';
import { ShutdownState } from './health/shutdown-state.js';
import { installRequestMetrics, RequestDurations } from './metrics/request-metrics.js';
import type { FastifyRequest } from 'fastify';
import { DomainError } from './shared/domain-error.js';
import { problemExamples, problemResponse } from './shared/http/api-problems.decorator.js';
import { clientErrorHandler, frameworkErrors } from './shared/http/framework-errors.js';
import { bodyEncodingError, useJsonBodyParser } from './shared/http/json-body-parser.js';
import { installNotModifiedHook, NotModifiedShortcuts } from './shared/http/not-modified.js';
import { closeHttp2ConnectionsOnShutdown, installShutdownGate } from './shared/http/shutdown-gate.js';
import { ProblemResponse } from './shared/http/problem.response.js';
import { requestIdOf } from './shared/logging.js';
import { DatabaseOutage } from './shared/database/database-outage.js';
import { ProblemDetailsFilter } from './shared/problem-details.filter.js';
import { RateLimitMetrics } from './shared/rate-limit/rate-limit-metrics.js';
import { AppValidationPipe } from './shared/validation.pipe.js';

export const API_PREFIX = 'api/v1';
/**
 * Probes live at the root, where load balancers and orchestrators look for them; so does the page
 * the verification and reset mails link to, a browser's address rather than an API operation.
 */
export const openApiPrefixExclusions = [
  { path: 'health/live', method: RequestMethod.GET },
  { path: 'health/ready', method: RequestMethod.GET },
  { path: 'verify-email', method: RequestMethod.GET },
  { path: 'reset-password', method: RequestMethod.GET },
  { path: 'reset-password/page.js', method: RequestMethod.GET },
];

function trustProxyOf(env: Env): string[] | false {
  const proxies = (env.TRUST_PROXY ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  return proxies.length > 0 ? proxies : false;
}

/** What Node's HTTP/2 server reads for its HTTP/1.1 connections (lib/internal/http2/core.js). */
interface Http1Timeouts {
  requestTimeout: number;
  headersTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
}

/**
 * With credentials, HTTPS with HTTP/2 and HTTP/1.1 chosen by ALPN on one port; without, plain
 * HTTP/1.1 for a TLS-terminating proxy in front.
 */
export function createAdapter(env: Env, tls?: TlsCredentials): FastifyAdapter {
  const options = {
    bodyLimit: env.BODY_LIMIT_BYTES,
    trustProxy: trustProxyOf(env),
    genReqId: requestIdOf,
    // A client has REQUEST_TIMEOUT_MS to send its whole request, headers and body, however it
    // trickles in (one byte a second keeps no connection); then 408 and the connection closes.
    // Node checks every 30 s by default, which would let a slow client stay 30 s longer.
    requestTimeout: env.REQUEST_TIMEOUT_MS,
    http: {
      requestTimeout: env.REQUEST_TIMEOUT_MS,
      headersTimeout: env.REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(env.REQUEST_TIMEOUT_MS / 4)),
    },
    // No traffic either way for a minute (a client that stopped reading its answer) drops the
    // connection; longer than any handler runs, so a slow answer is never cut.
    connectionTimeout: 60_000,
    // An idle connection is kept longer than a gateway waits between uploads. Node counts
    // REQUEST_TIMEOUT_MS (headers and request timeouts) from the first byte of each request, not
    // over the idle time between requests, so the two need no particular order.
    keepAliveTimeout: env.KEEP_ALIVE_TIMEOUT_MS,
    forceCloseConnections: 'idle',
    // During shutdown the shutdown gate answers, with a problem document (shutdown-gate.ts).
    return503OnClosing: false,
    routerOptions: { maxParamLength: 256 },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    frameworkErrors,
    clientErrorHandler,
  } as const;
  if (!tls) return new FastifyAdapter(options);
  const adapter = new FastifyAdapter({ ...options, http2: true, https: { ...secureContextOptions(tls), allowHTTP1: true } });
  // Fastify applies `http` and the timeouts above to an HTTP/1 server only; the HTTP/2 server
  // serves HTTP/1.1 connections (allowHTTP1) with the same settings, so they get them here.
  const server = adapter.getInstance().server as unknown as Http2SecureServer & Http1Timeouts;
  server.requestTimeout = env.REQUEST_TIMEOUT_MS;
  server.headersTimeout = env.REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = options.keepAliveTimeout;
  server.connectionsCheckingInterval = options.http.connectionsCheckingInterval;
  // The rest of the application sees the request and reply types of the HTTP/1 server; HTTP/2
  // requests come through Node's compatibility API, which has the same shape for what it uses.
  return adapter as unknown as FastifyAdapter;
}

/** The one route that takes bytes: a firmware image, streamed into the database as it arrives. */
const OCTET_STREAM_ROUTES = new Set(['/api/v1/admin/firmware/:id/image']);

/** JSON in, JSON out: a body of any other type is refused before it is parsed (but a firmware image). */
function nonJsonBodyError(request: FastifyRequest): DomainError | undefined {
  const hasBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
  if (!hasBody) return undefined;
  const type = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/octet-stream' && OCTET_STREAM_ROUTES.has(request.routeOptions.url ?? '')) return undefined;
  if (type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type)) return bodyEncodingError(request);
  return new DomainError('UNSUPPORTED_MEDIA_TYPE', 'unsupported-media-type', 'Send the body as application/json.');
}

/** Every tag an operation carries, with what it groups (the dashboard's generated client shows them). */
const TAGS: Array<[string, string]> = [
  ['devices', 'Gateways: registration, login and token refresh, their configuration, their claim code. Device tokens.'],
  ['telemetry', 'Gateways upload measurements. Device tokens.'],
  ['ota', 'Gateways ask which firmware to install and report how the update went. Device tokens.'],
  ['commands', 'Commands to gateways (reboot, ping, upload now, log level, log collection, firmware-specific actions): sent and followed from the dashboard with customer tokens, fetched and answered by gateways with device tokens.'],
  ['logs', 'Gateways upload their log lines (device tokens); the dashboard reads them (customer tokens).'],
  ['crashes', 'Gateways report crashes and reboot reasons (device tokens); owners read their devices\' reports, administrators the fleet\'s groups.'],
  ['accounts', 'Customer accounts: sign-up, e-mail verification, login, sessions, preferences.'],
  ['claims', 'Owning gateways: claim, list, release, and let a factory-reset gateway register again. Customer tokens.'],
  ['dashboard', 'What the dashboard reads and changes: devices, telemetry history, configuration, OTA history, alerts, events and the live stream. Customer tokens; administrators see every device.'],
  ['webhooks', "A customer's webhooks for the events of their devices. Customer tokens."],
  ['sharing', "Devices an owner shares with others by e-mail address or with an organization, as viewer or installer: shared, listed and revoked by the owner with a customer token, never with a key."],
  ['organizations', 'Organizations that own devices (every account has its personal one) and their members by e-mail address with a role: owner, admin, operator, viewer. A customer token, never a key.'],
  ['api-keys', "A customer's API keys for integrations (home automation, scripts): created, listed and revoked with a customer token, never with a key."],
  ['admin', 'Fleet administration: configuration and alert defaults, firmware releases, the registration allowlist, failed deliveries. Administrator accounts only.'],
  ['health', 'Probes for load balancers and orchestrators, outside /api/v1. No credentials.'],
];

export function buildOpenApiDocument(app: NestFastifyApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Device Cloud Service')
    .setDescription(
      'Cloud back end for battery-monitoring Wi-Fi gateways. Errors are RFC 9457 problem documents (application/problem+json) with a stable `code`.',
    )
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Device access token from register, login or refresh.' }, 'device')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Customer access token from POST /api/v1/auth/login. Admin operations need an administrator account.' },
      'customer',
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'dck_',
        description:
          'API key (`dck_…`) from POST /api/v1/user/api-keys, accepted only by the operations that list this scheme: `x-api-key-scope: read` takes any key, `write` only write keys (a read key: 403 API_KEY_SCOPE). Every other operation refuses keys with 403 API_KEY_SCOPE. Keys never carry admin rights.',
      },
      'apiKey',
    )
    .addApiKey(
      { type: 'apiKey', in: 'query', name: 'ticket', description: 'Single-use stream ticket from POST /api/v1/dashboard/stream/tickets (60 s), for EventSource, which cannot send headers.' },
      'streamTicket',
    )
    .setLicense('Proprietary', 'https://example.com/device-cloud/license')
    .addServer('/', 'This service');
  for (const [name, description] of TAGS) config.addTag(name, description);
  const document = SwaggerModule.createDocument(app, config.build(), {
    extraModels: [ProblemResponse],
    operationIdFactory: (_controller, method) => method,
  });
  // Operations without a bearer scheme are public (@Public, health probes): say so explicitly,
  // so generated clients and Swagger UI send no token there. Every operation but liveness needs
  // the database, and answers 503 while it cannot be reached (see Sql).
  for (const path of Object.values(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = path[method];
      if (!operation) continue;
      if (!operation.security) operation.security = [];
      if (operation.operationId !== 'getLiveness' && !operation.responses['503']) operation.responses['503'] = problemResponse(503, ['SERVICE_UNAVAILABLE']);
    }
  }
  document.components = { ...document.components, examples: { ...document.components?.examples, ...problemExamples(document.paths) } };
  // What the service sends to customers' webhooks (OpenAPI 3.1); @nestjs/swagger has no decorator for it.
  document.webhooks = webhookDocumentation() as OpenAPIObject['webhooks'];
  return document;
}

/**
 * Everything that turns the Nest application into this service's HTTP API: prefix, validation,
 * problem details, logging, OpenAPI and Swagger UI. main.ts and the end-to-end tests share it.
 */
export async function createApp(settings: AppSettings, tls?: TlsCredentials): Promise<NestFastifyApplication> {
  const adapter = createAdapter(settings.env, tls);
  const registry: { shortcuts?: NotModifiedShortcuts; shutdown?: ShutdownState } = {};
  installShutdownGate(adapter.getInstance(), () => registry.shutdown?.shuttingDown ?? false);
  if (tls) closeHttp2ConnectionsOnShutdown(adapter.getInstance());
  installNotModifiedHook(adapter.getInstance(), () => registry.shortcuts);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(settings), adapter, {
    bufferLogs: true,
  });
  registry.shortcuts = app.get(NotModifiedShortcuts);
  registry.shutdown = app.get(ShutdownState);
  // helmet's headers, from one middleware built at start. (@fastify/helmet builds a new one for
  // every request: 19 µs each, 5 % of an ingest request's CPU.)
  const securityHeaders = helmet({
    // Swagger UI at /docs loads its own scripts and styles (some inline styles); nothing else is allowed.
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        // Over plain HTTP (development, or behind a TLS-terminating proxy) the browser would rewrite
        // every asset URL of /docs to https and load none of them; helmet sends it by default.
        upgradeInsecureRequests: tls ? [] : null,
      },
    },
  });
  const fastify = app.getHttpAdapter().getInstance();
  if (settings.env.METRICS_PORT !== undefined) installRequestMetrics(fastify, app.get(RequestDurations));
  fastify.addHook('onRequest', (request, reply, done) => securityHeaders(request.raw, reply.raw, (error?: unknown) => done(error as Error | undefined)));
  const corsOrigins = (settings.env.CORS_ORIGINS ?? '').split(',').map((origin) => origin.trim()).filter(Boolean);
  // Browsers on other origins get no CORS headers (and so no access) unless listed in CORS_ORIGINS.
  app.enableCors({
    origin: corsOrigins.length > 0 ? corsOrigins : false,
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'if-match', 'if-none-match'],
    exposedHeaders: ['etag', 'retry-after', 'x-request-id', 'www-authenticate', 'content-disposition'],
    maxAge: 600,
  });
  app.useLogger(app.get(Logger));
  app.setGlobalPrefix(API_PREFIX, { exclude: openApiPrefixExclusions });
  useJsonBodyParser(app, settings.env.BODY_LIMIT_BYTES);
  // The body of an image upload is handed over unread: the handler streams it, and bounds it itself.
  fastify.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));
  app.useGlobalPipes(new AppValidationPipe());
  app.useGlobalFilters(new ProblemDetailsFilter(app.get(HttpAdapterHost), app.get(DatabaseOutage), app.get(RateLimitMetrics)));
  // A callback hook: it runs on every request, and costs no promise that way.
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done(nonJsonBodyError(request));
  });
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
    customSiteTitle: 'Device Cloud Service API',
    // The token given to Authorize is kept in the browser's local storage across reloads.
    swaggerOptions: { persistAuthorization: true },
  });
  await app.init();
  return app;
}
