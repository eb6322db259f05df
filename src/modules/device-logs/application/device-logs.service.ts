import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { DeviceAccess, type DeviceViewer } from '../../sharing/index.js';
import { DeviceLogStore, type LogQuery } from '../domain/device-log.store.js';
import { DeviceLogFeed } from './device-log-feed.js';
import { LogQuotaExceededError } from '../domain/device-logs.errors.js';
import { admitLines, checkMessages, secondsToNextUtcDay, utcDay, type LogLine, type LogRejection, type StoredLogLine } from '../domain/device-log.js';

export interface LogIngestOutcome {
  accepted: number;
  duplicates: number;
  rejected: Array<{ index: number; code: LogRejection }>;
}

/** Gateways' log lines: stored idempotently against a daily quota, read by whoever sees the device. */
@Injectable()
export class DeviceLogsService {
  constructor(
    private readonly store: DeviceLogStore,
    private readonly access: DeviceAccess,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly feed: DeviceLogFeed,
  ) {}

  async ingest(deviceId: string, lines: readonly LogLine[]): Promise<LogIngestOutcome> {
    checkMessages(lines);
    const now = this.clock.now();
    const { admitted, rejected } = admitLines(lines, now, this.env.LOG_RETENTION_DAYS);
    if (admitted.length === 0) return { accepted: 0, duplicates: 0, rejected };
    const outcome = await this.store.store(deviceId, admitted, now, utcDay(now), this.env.LOG_BYTES_PER_DEVICE_PER_DAY);
    if (!outcome) throw new LogQuotaExceededError(this.env.LOG_BYTES_PER_DEVICE_PER_DAY, secondsToNextUtcDay(now));
    this.feed.publish({ deviceId, ownerId: outcome.ownerId, lines: outcome.inserted });
    return { accepted: outcome.inserted.length, duplicates: outcome.duplicates, rejected };
  }

  async list(viewer: DeviceViewer, deviceId: string, query: Omit<LogQuery, 'since'>): Promise<StoredLogLine[]> {
    const grant = await this.access.toSee(viewer, deviceId);
    return this.store.list(deviceId, { ...query, since: grant.role === 'admin' ? null : grant.visibleSince });
  }
}
