import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { DatabaseConnection } from '../../../shared/database/database-connection.js';
import { DeviceLogStore } from '../domain/device-log.store.js';

/**
 * Keeps a partition for every day from the retention cut-off to two days ahead, and drops days past
 * LOG_RETENTION_DAYS: at start (lines need a partition before the first one arrives) and hourly.
 * Instances take turns through an advisory lock.
 */
@Injectable()
export class DeviceLogPartitions implements OnApplicationBootstrap {
  constructor(
    private readonly store: DeviceLogStore,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly database: DatabaseConnection,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.database.atStartup('device log partitions', () => this.run());
  }

  @Cron(CronExpression.EVERY_HOUR, { name: 'device-log-partitions' })
  async run(): Promise<{ created: string[]; dropped: string[] }> {
    return this.store.maintain(this.clock.now(), this.env.LOG_RETENTION_DAYS);
  }
}
