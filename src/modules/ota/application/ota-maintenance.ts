import { Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { ADVISORY_LOCKS } from '../../../shared/database/advisory-locks.js';
import { Sql } from '../../../shared/database/sql.js';
import { FirmwareReleasesService } from './firmware-releases.service.js';

/**
 * Every minute: a release whose devices fail it pauses itself even when the failures were not
 * reported as events (a device that installed it and then registered with an older version).
 * One instance at a time (advisory lock); stalled devices need no job, the status computes them.
 */
@Injectable()
export class OtaMaintenance {
  private readonly logger = new Logger(OtaMaintenance.name);

  constructor(
    private readonly releases: FirmwareReleasesService,
    private readonly sql: Sql,
  ) {}

  @Cron(CronExpression.EVERY_MINUTE)
  async run(): Promise<void> {
    try {
      await this.sql.exclusively(ADVISORY_LOCKS.otaMaintenance, () => this.releases.pauseFailingReleases());
    } catch {
      this.logger.warn('Checking failure budgets of firmware releases failed; retrying in a minute.');
    }
  }
}
