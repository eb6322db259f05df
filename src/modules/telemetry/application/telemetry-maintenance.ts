import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { DatabaseConnection } from '../../../shared/database/database-connection.js';
import { TelemetryPartitionStore } from '../domain/telemetry-partition.store.js';

/**
 * Keeps telemetry partitions ahead of time and drops months past retention: at start (records
 * need a partition before the first one arrives) and hourly. Instances take turns through an
 * advisory lock, so many instances do the work once.
 */
@Injectable()
export class TelemetryMaintenance implements OnApplicationBootstrap {
  constructor(
    private readonly partitions: TelemetryPartitionStore,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly database: DatabaseConnection,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.database.atStartup('telemetry partitions', () => this.run());
  }

  @Cron(CronExpression.EVERY_HOUR, { name: 'telemetry-partitions' })
  async run(): Promise<{ created: string[]; dropped: string[] }> {
    return this.partitions.maintain(this.clock.now(), this.env.TELEMETRY_RETENTION_DAYS);
  }
}
