import { Module, type DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { AuthModule } from './auth/auth.module.js';
import { ConfigModule, type Clock } from './config/config.module.js';
import type { Argon2Cost } from './shared/crypto/secret-hasher.js';
import { replicaUrls, type Env } from './config/env.js';
import type { Secrets } from './config/secrets.js';
import { HealthModule } from './health/health.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { AccountsModule } from './modules/accounts/index.js';
import { AlertsModule } from './modules/alerts/index.js';
import { ApiKeysModule } from './modules/api-keys/index.js';
import { BatteriesModule } from './modules/batteries/index.js';
import { AuditModule } from './modules/audit/index.js';
import { ClaimsModule } from './modules/claims/index.js';
import { CommandsModule } from './modules/commands/index.js';
import { CrashesModule } from './modules/crashes/index.js';
import { DeviceLogsModule } from './modules/device-logs/index.js';
import { DashboardModule } from './modules/dashboard/index.js';
import { DeviceReturnsModule, DevicesModule } from './modules/devices/index.js';
import { EventsModule } from './modules/events/index.js';
import { NotificationsModule } from './modules/notifications/index.js';
import { OtaModule } from './modules/ota/index.js';
import { SharingModule } from './modules/sharing/index.js';
import { OrganizationsModule } from './modules/organizations/index.js';
import { StreamModule } from './modules/stream/index.js';
import { TelemetryModule } from './modules/telemetry/index.js';
import { ENTITIES } from './schema.js';
import { DatabaseModule } from './shared/database/database.module.js';
import { JobsModule } from './shared/jobs/jobs.module.js';
import { MailModule } from './shared/mail/mail.module.js';
import { loggerOptions } from './shared/logging.js';
import { NotModifiedModule } from './shared/http/not-modified.js';
import { RateLimitModule } from './shared/rate-limit/rate-limit.module.js';

export interface AppSettings {
  env: Env;
  secrets: Secrets;
  databaseUrl: string;
  /** Where log lines go instead of stdout (the e2e tests capture them). */
  logDestination?: DestinationStream;
  /** The time every rule of the service reads; the system's by default (the e2e tests pass one they move). */
  clock?: Clock;
  /** argon2id's cost for passwords and claim codes; ARGON2_OPTIONS's by default (the e2e tests pass a cheaper one). */
  passwordHashCost?: Argon2Cost;
}

@Module({})
export class AppModule {
  static register({ env, secrets, databaseUrl, logDestination, clock, passwordHashCost }: AppSettings): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(env, secrets, clock, passwordHashCost),
        ScheduleModule.forRoot(),
        LoggerModule.forRoot(loggerOptions(env, logDestination)),
        DatabaseModule.register({
          url: databaseUrl,
          poolSize: env.DB_POOL_SIZE,
          connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
          statementTimeoutMs: env.DATABASE_STATEMENT_TIMEOUT_MS,
          replicas: { urls: replicaUrls(env), maxLagMs: env.REPLICA_MAX_LAG_MS, checkIntervalMs: env.REPLICA_CHECK_INTERVAL_MS },
        }, ENTITIES),
        JobsModule.register({ url: databaseUrl, pollIntervalMs: env.JOB_POLL_INTERVAL_MS }),
        MailModule,
        RateLimitModule,
        MetricsModule.register(env),
        NotModifiedModule,
        HealthModule,
        AuthModule.register([DevicesModule, AccountsModule, StreamModule, ApiKeysModule]),
        DevicesModule,
        DeviceReturnsModule,
        AccountsModule,
        ClaimsModule,
        TelemetryModule,
        OtaModule,
        EventsModule,
        AlertsModule,
        DashboardModule,
        NotificationsModule,
        StreamModule,
        ApiKeysModule,
        BatteriesModule,
        AuditModule,
        SharingModule,
        OrganizationsModule,
        CommandsModule,
        DeviceLogsModule,
        CrashesModule,
      ],
    };
  }
}
