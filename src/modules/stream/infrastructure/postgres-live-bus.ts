import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql } from '../../../shared/database/sql.js';
import { LiveBus } from '../domain/live-bus.js';

export const TELEMETRY_CHANNEL = 'device_cloud_telemetry';

/**
 * The bus without Redis: PostgreSQL NOTIFY, heard on the change feed's one listening connection
 * per instance (never one per subscriber). Works on the embedded server as on any other.
 */
@Injectable()
export class PostgresLiveBus extends LiveBus {
  constructor(
    private readonly sql: Sql,
    feed: ChangeFeed,
  ) {
    super();
    feed.listen(TELEMETRY_CHANNEL, (payload) => this.received(payload));
  }

  protected async send(payloads: string[]): Promise<void> {
    await this.sql.rows('SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload', [TELEMETRY_CHANNEL, payloads], 'live_telemetry_notify');
  }
}
