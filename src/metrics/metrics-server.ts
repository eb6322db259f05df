import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Registry } from 'prom-client';

/**
 * The metrics listener: GET /metrics in Prometheus's text format, on METRICS_HOST:METRICS_PORT,
 * apart from the API (no route of the API serves it, and nothing else is served here). Opened
 * while the application starts and closed after the API's listener.
 */
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server: Server | null = null;

  constructor(
    private readonly registry: Registry,
    private readonly options: { port: number; host: string },
  ) {}

  /** Where it listens; null before the start and after the close. */
  address(): AddressInfo | null {
    const address = this.server?.address();
    return address && typeof address === 'object' ? address : null;
  }

  async onApplicationBootstrap(): Promise<void> {
    const server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0];
      if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
        response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: scrape GET /metrics\n');
        return;
      }
      this.registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': this.registry.contentType, 'cache-control': 'no-store' }).end(request.method === 'HEAD' ? undefined : text),
        (error: unknown) => {
          this.logger.error({ err: error }, 'Metrics could not be collected');
          response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Metrics could not be collected\n');
        },
      );
    });
    // A scraper that stops mid-answer holds no connection for long.
    server.requestTimeout = 10_000;
    server.headersTimeout = 10_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    const { address, port } = this.address()!;
    this.logger.log({ url: `http://${address.includes(':') ? `[${address}]` : address}:${port}/metrics` }, 'Prometheus metrics listening');
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }
}
