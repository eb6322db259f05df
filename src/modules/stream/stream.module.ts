import { Module } from '@nestjs/common';
import { StreamTicketAuthenticator } from '../../auth/principals.js';
import { Env } from '../../config/env.js';
import { HealthModule } from '../../health/health.module.js';
import { ChangeFeed } from '../../shared/database/change-feed.js';
import { Sql } from '../../shared/database/sql.js';
import { AccountsModule } from '../accounts/index.js';
import { DeviceLogsModule } from '../device-logs/index.js';
import { EventsModule } from '../events/index.js';
import { OrganizationsModule } from '../organizations/index.js';
import { SharingModule } from '../sharing/index.js';
import { TelemetryModule } from '../telemetry/index.js';
import { LiveRelay } from './application/live-relay.js';
import { StreamHub } from './application/stream-hub.js';
import { StreamTickets } from './application/stream-tickets.js';
import { StreamsService } from './application/streams.service.js';
import { LiveBus } from './domain/live-bus.js';
import { StreamTicketStore } from './domain/stream-ticket.store.js';
import { StreamController } from './http/stream.controller.js';
import { PostgresLiveBus } from './infrastructure/postgres-live-bus.js';
import { RedisLiveBus } from './infrastructure/redis-live-bus.js';
import { SqlStreamTicketStore } from './infrastructure/sql-stream-ticket.store.js';

/** The dashboard's live stream (Server-Sent Events): stored telemetry and the event log, pushed across instances. */
@Module({
  imports: [AccountsModule, EventsModule, TelemetryModule, DeviceLogsModule, HealthModule, SharingModule, OrganizationsModule],
  controllers: [StreamController],
  providers: [
    StreamHub,
    StreamsService,
    StreamTickets,
    { provide: StreamTicketStore, useClass: SqlStreamTicketStore },
    LiveRelay,
    {
      provide: LiveBus,
      inject: [Env, Sql, ChangeFeed],
      useFactory: (env: Env, sql: Sql, feed: ChangeFeed): LiveBus => (env.REDIS_URL ? new RedisLiveBus(env.REDIS_URL, env.REDIS_KEY_PREFIX) : new PostgresLiveBus(sql, feed)),
    },
    { provide: StreamTicketAuthenticator, useExisting: StreamTickets },
  ],
  exports: [StreamTicketAuthenticator, StreamsService],
})
export class StreamModule {}
