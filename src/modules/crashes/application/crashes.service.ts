import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { DeviceAccess, type DeviceViewer } from '../../sharing/index.js';
import { CrashStore, type CrashPage } from '../domain/crash.store.js';
import type { CrashGroup, CrashReport, StoredCrash } from '../domain/crash-report.js';

export const SAMPLES_PER_GROUP = 20;

/** Crash reports as gateways send them, the fleet's groups as administrators read them, a device's reports as its owner does. */
@Injectable()
export class CrashesService {
  constructor(
    private readonly store: CrashStore,
    private readonly access: DeviceAccess,
    private readonly clock: Clock,
  ) {}

  report(deviceId: string, report: CrashReport): Promise<{ groupId: string; created: boolean }> {
    return this.store.store(deviceId, report, this.clock.now());
  }

  async ofDevice(viewer: DeviceViewer, deviceId: string, page: Omit<CrashPage, 'since'>): Promise<StoredCrash[]> {
    const grant = await this.access.toSee(viewer, deviceId);
    return this.store.ofDevice(deviceId, { ...page, since: grant.role === 'admin' ? null : grant.visibleSince });
  }

  groups(offset: number, limit: number): Promise<CrashGroup[]> {
    return this.store.groups(offset, limit);
  }

  async group(groupId: string): Promise<{ group: CrashGroup; samples: StoredCrash[] }> {
    const group = /^[0-9a-f]{16}$/.test(groupId) ? await this.store.group(groupId) : null;
    if (!group) throw new NotFoundError('No crash group has this id.');
    return { group, samples: await this.store.samples(groupId, SAMPLES_PER_GROUP) };
  }
}
