import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { ADVISORY_LOCKS } from '../../../shared/database/advisory-locks.js';
import { Sql } from '../../../shared/database/sql.js';
import { EventLog } from '../../events/index.js';
import { DeviceRepository } from '../domain/device.repository.js';
import { FleetDefaultsStore } from './fleet-defaults.js';

/**
 * Every OFFLINE_CHECK_INTERVAL_MS, one instance (advisory lock) marks offline the devices no longer
 * online by the one rule (domain/device-online.ts) and records one device.offline each. The
 * next telemetry of such a device records device.online (OnlineTransitions, told by the ingest flush).
 */
@Injectable()
export class OfflineCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger(OfflineCheck.name);

  constructor(
    private readonly devices: DeviceRepository,
    private readonly defaults: FleetDefaultsStore,
    private readonly events: EventLog,
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    this.scheduler.addInterval('offline-check', setInterval(() => void this.run(), this.env.OFFLINE_CHECK_INTERVAL_MS));
  }

  async run(): Promise<number> {
    try {
      const marked = await this.sql.exclusively(ADVISORY_LOCKS.offlineCheck, async () => {
        const now = this.clock.now();
        const { settings } = await this.defaults.current();
        return this.devices.markSilentOffline(now, settings.telemetryIntervalSec, async (tx, silent) => {
          for (const device of silent) {
            await this.events.record(tx, { type: 'device.offline', deviceId: device.deviceId, ownerId: device.ownerId, occurredAt: now, data: { lastTelemetryAt: device.lastTelemetryAt.toISOString() } });
          }
        });
      });
      return marked ?? 0;
    } catch (error) {
      this.logger.warn({ code: (error as { code?: unknown }).code }, 'Offline check failed; trying again at the next interval');
      return 0;
    }
  }
}
