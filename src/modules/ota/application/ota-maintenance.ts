import { Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { FirmwareReleasesService } from './firmware-releases.service.js';

/**
 * Every minute: a release whose devices fail it pauses itself even when the failures were not
 * reported as events (a device that installed it and then registered with an older version).
 */
@Injectable()
export class OtaMaintenance {
  private readonly logger = new Logger(OtaMaintenance.name);

  constructor(private readonly releases: FirmwareReleasesService) {}

  @Cron(CronExpression.EVERY_MINUTE)
  async run(): Promise<void> {
    try {
      await this.releases.pauseFailingReleases();
    } catch {
      this.logger.warn('Checking failure budgets of firmware releases failed; retrying in a minute.');
    }
  }
}
