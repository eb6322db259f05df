import { Global, Injectable, Module } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { noneMatchHolds } from './etag.js';

type EtagOf = (deviceId: string) => Promise<string>;
type DeviceOf = (authorization: string | undefined) => Promise<string | null>;

export interface ShortcutOptions {
  /** A query parameter that sends the poll to the controller (a long poll's wait, say). */
  unlessQuery?: string;
}

/**
 * Answers a gateway's conditional poll (GET with If-None-Match) with 304 in a Fastify onRequest
 * hook, before Nest's pipeline: at tens of thousands of polls per second the pipeline cost three
 * times the work of the answer (bench S4). Only the unchanged, correctly authenticated case is
 * answered here, with the same token checks as the device guard (AuthModule supplies them) and
 * the same ETag as the controller (which registers it); anything else — no or stale ETag, a bad
 * token, an error — goes on to the controller and gets its normal answer.
 */
@Injectable()
export class NotModifiedShortcuts {
  private readonly routes = new Map<string, { etagOf: EtagOf; options: ShortcutOptions }>();
  private deviceOf: DeviceOf | null = null;

  /** `routePath` as Fastify knows the route, global prefix included (e.g. /api/v1/device/config). */
  register(routePath: string, etagOf: EtagOf, options: ShortcutOptions = {}): void {
    this.routes.set(routePath, { etagOf, options });
  }

  useDeviceAuthentication(deviceOf: DeviceOf): void {
    this.deviceOf = deviceOf;
  }

  /** Sends the 304 and returns true when the poll is unchanged and the token good; false: let the pipeline answer. */
  async answer(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const ifNoneMatch = request.headers['if-none-match'];
    if (request.method !== 'GET' || typeof ifNoneMatch !== 'string' || this.deviceOf === null) return false;
    const route = this.routes.get(request.routeOptions.url ?? '');
    if (!route) return false;
    const { etagOf, options } = route;
    if (options.unlessQuery !== undefined && Object.hasOwn((request.query ?? {}) as object, options.unlessQuery)) return false;
    let etag: string;
    try {
      const deviceId = await this.deviceOf(request.headers.authorization);
      if (deviceId === null) return false;
      etag = await etagOf(deviceId);
    } catch {
      return false; // the controller answers, with its own error handling
    }
    if (!noneMatchHolds(ifNoneMatch, etag)) return false;
    await reply.header('x-request-id', request.id).header('ETag', etag).header('Cache-Control', 'private, no-cache').code(304).send();
    return true;
  }
}

/**
 * Adds the hook to a Fastify instance before Nest registers its middleware (which would otherwise
 * run first: request logging alone cost as much as the answer). `shortcuts` is looked up per
 * request because the hook exists before the Nest application that holds it. 304s answered here
 * are not in the request log.
 */
export function installNotModifiedHook(fastify: FastifyInstance, shortcuts: () => NotModifiedShortcuts | undefined): void {
  fastify.addHook('onRequest', async (request, reply) => {
    const registry = shortcuts();
    // Returning the reply ends the request here: no further hooks, middleware or handler run.
    if (registry && (await registry.answer(request, reply))) return reply;
  });
}

@Global()
@Module({ providers: [NotModifiedShortcuts], exports: [NotModifiedShortcuts] })
export class NotModifiedModule {}
