import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { LiveBus } from '../domain/live-bus.js';

/**
 * The bus with REDIS_URL: Redis pub/sub, one publishing and one subscribed connection per instance.
 * Takes the telemetry fan-out off PostgreSQL where there are many instances.
 */
export class RedisLiveBus extends LiveBus implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisLiveBus.name);
  private readonly channel: string;
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private warned = false;

  constructor(url: string, keyPrefix: string) {
    super();
    this.channel = `${keyPrefix}live:telemetry`;
    const options = { connectTimeout: 2000, maxRetriesPerRequest: 1, disconnectTimeout: 100 };
    this.publisher = new Redis(url, { ...options, connectionName: 'dcs-live-publish', commandTimeout: 1000 });
    this.subscriber = new Redis(url, { ...options, connectionName: 'dcs-live-subscribe' });
    for (const client of [this.publisher, this.subscriber]) client.on('error', () => this.warnOnce());
    this.subscriber.on('ready', () => (this.warned = false));
    this.subscriber.on('message', (_channel: string, payload: string) => this.received(payload));
    // ioredis subscribes again by itself after a reconnect.
    this.subscriber.subscribe(this.channel).catch(() => this.warnOnce());
  }

  protected async send(payloads: string[]): Promise<void> {
    const pipeline = this.publisher.pipeline();
    for (const payload of payloads) pipeline.publish(this.channel, payload);
    await pipeline.exec();
  }

  onApplicationShutdown(): void {
    this.publisher.disconnect();
    this.subscriber.disconnect();
  }

  private warnOnce(): void {
    if (!this.warned) this.logger.warn('Redis is not reachable: telemetry from other instances reaches this one\'s streams again once it is.');
    this.warned = true;
  }
}
