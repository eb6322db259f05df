import type { FastifyInstance } from 'fastify';
import type { Histogram } from 'prom-client';

/** The one route label of every request no route matched, so scanners and typos cannot add series. */
export const UNMATCHED_ROUTE = 'unmatched';

type RequestLabels = 'route' | 'method' | 'status_code';

/**
 * The request-duration histogram's series, resolved once per route, method and status and kept:
 * a request costs three map lookups and one observe. Routes are labelled with their registered
 * pattern (`/api/v1/dashboard/devices/:deviceId/telemetry/history`), never the URL, so device ids
 * and query strings add no series; their number is bounded by the routes, the methods Node
 * accepts and the status codes the service answers.
 */
export class RequestDurations {
  private readonly series = new Map<string, Map<string, Map<number, Histogram.Internal<RequestLabels>>>>();

  constructor(private readonly histogram: Histogram<RequestLabels>) {}

  observe(routePattern: string | undefined, method: string, status: number, milliseconds: number): void {
    const route = routePattern ?? UNMATCHED_ROUTE;
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (!child) byStatus.set(status, (child = this.histogram.labels(route, method, String(status))));
    child.observe(milliseconds / 1000);
  }
}

/**
 * Times every answer, whoever sent it (a handler, the problem filter, the 304 shortcut, the
 * shutdown gate), from Fastify's own start time: a callback hook, no promise per request.
 */
export function installRequestMetrics(fastify: FastifyInstance, durations: RequestDurations): void {
  fastify.addHook('onResponse', (request, reply, done) => {
    durations.observe(request.routeOptions.url, request.method, reply.statusCode, reply.elapsedTime);
    done();
  });
}
