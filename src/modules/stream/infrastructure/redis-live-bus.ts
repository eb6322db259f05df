import { randomUUID } from 'node:crypto';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { decodeMessage, encodeMessage, LiveBus, type TelemetryMessage } from '../domain/live-bus.js';

/**
 * The bus with REDIS_URL: Redis pub/sub, one publishing and one subscribed connection per instance.
 * Takes the telemetry fan-out off PostgreSQL where there are many instances.
 */
export class RedisLiveBus extends LiveBus implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisLiveBus.name);
  private readonly origin = randomUUID();
  private readonly channel: string;
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly listeners: Array<(message: TelemetryMessage) => void> = [];
  private warned = false;

  constructor(url: string, keyPrefix: string) {
    super();
    this.channel = `${keyPrefix}live:telemetry`;
    const options = { connectTimeout: 2000, maxRetriesPerRequest: 1, disconnectTimeout: 100 };
    this.publisher = new Redis(url, { ...options, connectionName: 'dcs-live-publish', commandTimeout: 1000 });
    this.subscriber = new Redis(url, { ...options, connectionName: 'dcs-live-subscribe' });
    for (const client of [this.publisher, this.subscriber]) client.on('error', () => this.warnOnce());
    this.subscriber.on('ready', () => (this.warned = false));
    this.subscriber.on('message', (_channel: string, payload: string) => {
      const message = decodeMessage(payload, this.origin);
      if (message) for (const listener of this.listeners) listener(message);
    });
    // ioredis subscribes again by itself after a reconnect.
    this.subscriber.subscribe(this.channel).catch(() => this.warnOnce());
  }

  async publish(messages: TelemetryMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const pipeline = this.publisher.pipeline();
    for (const message of messages) pipeline.publish(this.channel, encodeMessage(this.origin, message));
    await pipeline.exec();
  }

  subscribe(listener: (message: TelemetryMessage) => void): void {
    this.listeners.push(listener);
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
