import { Module, type DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { AuthModule } from './auth/auth.module.js';
import { ConfigModule } from './config/config.module.js';
import type { Env } from './config/env.js';
import type { Secrets } from './config/secrets.js';
import { HealthModule } from './health/health.module.js';
import { AccountsModule } from './modules/accounts/accounts.module.js';
import { ClaimsModule } from './modules/claims/claims.module.js';
import { DashboardModule } from './modules/dashboard/dashboard.module.js';
import { DevicesModule } from './modules/devices/devices.module.js';
import { OtaModule } from './modules/ota/ota.module.js';
import { TelemetryModule } from './modules/telemetry/telemetry.module.js';
import { DatabaseModule } from './shared/database/database.module.js';
import { loggerOptions } from './shared/logging.js';
import { NotModifiedModule } from './shared/http/not-modified.js';
import { RateLimitModule } from './shared/rate-limit/rate-limit.module.js';

export interface AppSettings {
  env: Env;
  secrets: Secrets;
  databaseUrl: string;
  /** Where log lines go instead of stdout (the e2e tests capture them). */
  logDestination?: DestinationStream;
}

@Module({})
export class AppModule {
  static register({ env, secrets, databaseUrl, logDestination }: AppSettings): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(env, secrets),
        ScheduleModule.forRoot(),
        LoggerModule.forRoot(loggerOptions(env, logDestination)),
        DatabaseModule.register({
          url: databaseUrl,
          poolSize: env.DB_POOL_SIZE,
          connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
          statementTimeoutMs: env.DATABASE_STATEMENT_TIMEOUT_MS,
        }),
        RateLimitModule,
        NotModifiedModule,
        HealthModule,
        AuthModule,
        DevicesModule,
        AccountsModule,
        ClaimsModule,
        TelemetryModule,
        OtaModule,
        DashboardModule,
      ],
    };
  }
}
