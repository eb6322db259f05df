import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql } from '../../../shared/database/sql.js';
import { decodeMessage, encodeMessage, LiveBus, type TelemetryMessage } from '../domain/live-bus.js';

export const TELEMETRY_CHANNEL = 'device_cloud_telemetry';

/**
 * The bus without Redis: PostgreSQL NOTIFY, heard on the change feed's one listening connection
 * per instance (never one per subscriber). Works on the embedded server as on any other.
 */
@Injectable()
export class PostgresLiveBus extends LiveBus {
  private readonly origin = randomUUID();
  private readonly listeners: Array<(message: TelemetryMessage) => void> = [];

  constructor(
    private readonly sql: Sql,
    feed: ChangeFeed,
  ) {
    super();
    feed.listen(TELEMETRY_CHANNEL, (payload) => {
      const message = decodeMessage(payload, this.origin);
      if (message) for (const listener of this.listeners) listener(message);
    });
  }

  async publish(messages: TelemetryMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.sql.rows('SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload', [TELEMETRY_CHANNEL, messages.map((message) => encodeMessage(this.origin, message))], 'live_telemetry_notify');
  }

  subscribe(listener: (message: TelemetryMessage) => void): void {
    this.listeners.push(listener);
  }
}
