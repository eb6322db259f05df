import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Histogram, Registry } from 'prom-client';
import { installRequestMetrics, RequestDurations, UNMATCHED_ROUTE } from './request-metrics.js';

/** A Fastify server with two routes, timed as the service times its own; no database, no Nest. */
async function aServer() {
  const registry = new Registry();
  const histogram = new Histogram({ name: 'http_request_duration_seconds', help: 'test', labelNames: ['route', 'method', 'status_code'] as const, registers: [registry] });
  const fastify = new FastifyAdapter().getInstance();
  installRequestMetrics(fastify, new RequestDurations(histogram));
  fastify.get('/api/v1/devices/:deviceId/history', async (request, reply) => {
    const { deviceId } = request.params as { deviceId: string };
    return deviceId === 'gw-missing' ? reply.code(404).send({ code: 'NOT_FOUND' }) : { deviceId };
  });
  fastify.post('/api/v1/telemetry', async () => ({ accepted: 1 }));
  await fastify.ready();
  const counts = async () => {
    const { values } = await histogram.get();
    return values.filter((value) => value.metricName === 'http_request_duration_seconds_count').map(({ labels, value }) => ({ ...labels, value }));
  };
  return { fastify, counts };
}

describe('request duration labels', () => {
  it('label a route by its pattern, never by the URL: ids and query strings add no series', async () => {
    const { fastify, counts } = await aServer();

    for (const url of ['/api/v1/devices/gw-0001/history', '/api/v1/devices/gw-0002/history?from=2026-01-01', '/api/v1/devices/gw-0003/history']) {
      expect((await fastify.inject({ method: 'GET', url })).statusCode).toBe(200);
    }
    expect((await fastify.inject({ method: 'POST', url: '/api/v1/telemetry' })).statusCode).toBe(200);

    expect(await counts()).toEqual(
      expect.arrayContaining([
        { route: '/api/v1/devices/:deviceId/history', method: 'GET', status_code: '200', value: 3 },
        { route: '/api/v1/telemetry', method: 'POST', status_code: '200', value: 1 },
      ]),
    );
    expect(await counts()).toHaveLength(2);
  });

  it('keep the pattern when the route itself answers an error, apart from its successes', async () => {
    const { fastify, counts } = await aServer();

    await fastify.inject({ method: 'GET', url: '/api/v1/devices/gw-0001/history' });
    await fastify.inject({ method: 'GET', url: '/api/v1/devices/gw-missing/history' });

    expect(await counts()).toEqual([
      { route: '/api/v1/devices/:deviceId/history', method: 'GET', status_code: '200', value: 1 },
      { route: '/api/v1/devices/:deviceId/history', method: 'GET', status_code: '404', value: 1 },
    ]);
  });

  it('collapse every URL no route matches into one label per method and status', async () => {
    const { fastify, counts } = await aServer();

    for (const url of ['/metrics', '/wp-login.php', '/api/v1/devices/gw-0001', '/api/v1/devices/gw-0001/history/extra']) {
      expect((await fastify.inject({ method: 'GET', url })).statusCode).toBe(404);
    }
    await fastify.inject({ method: 'DELETE', url: '/api/v1/telemetry' });

    expect(await counts()).toEqual([
      { route: UNMATCHED_ROUTE, method: 'GET', status_code: '404', value: 4 },
      { route: UNMATCHED_ROUTE, method: 'DELETE', status_code: '404', value: 1 },
    ]);
  });
});
