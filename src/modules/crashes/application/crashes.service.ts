import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { FirmwareSymbols } from '../../ota/index.js';
import { DeviceAccess, type DeviceViewer } from '../../sharing/index.js';
import { CrashStore, type CrashPage } from '../domain/crash.store.js';
import type { CrashGroup, CrashReport, NamedFrame, StoredCrash } from '../domain/crash-report.js';

export const SAMPLES_PER_GROUP = 20;

/** A report as it is read: its backtrace named by the symbol map of its release, where there is one. */
export interface ReadCrash extends StoredCrash {
  frames: NamedFrame[];
}

export interface ReadCrashGroup extends CrashGroup {
  topFunctions: Array<string | null>;
}

/** Crash reports as gateways send them, the fleet's groups as administrators read them, a device's reports as its owner does. */
@Injectable()
export class CrashesService {
  constructor(
    private readonly store: CrashStore,
    private readonly access: DeviceAccess,
    private readonly symbols: FirmwareSymbols,
    private readonly clock: Clock,
  ) {}

  report(deviceId: string, report: CrashReport): Promise<{ groupId: string; created: boolean }> {
    return this.store.store(deviceId, report, this.clock.now());
  }

  async ofDevice(viewer: DeviceViewer, deviceId: string, page: Omit<CrashPage, 'since'>): Promise<ReadCrash[]> {
    const grant = await this.access.toSee(viewer, deviceId);
    return this.named(await this.store.ofDevice(deviceId, { ...page, since: grant.role === 'admin' ? null : grant.visibleSince }));
  }

  async groups(offset: number, limit: number): Promise<ReadCrashGroup[]> {
    return Promise.all((await this.store.groups(offset, limit)).map((group) => this.namedGroup(group)));
  }

  async group(groupId: string): Promise<{ group: ReadCrashGroup; samples: ReadCrash[] }> {
    const group = /^[0-9a-f]{16}$/.test(groupId) ? await this.store.group(groupId) : null;
    if (!group) throw new NotFoundError('No crash group has this id.');
    return { group: await this.namedGroup(group), samples: await this.named(await this.store.samples(groupId, SAMPLES_PER_GROUP)) };
  }

  private async namedGroup(group: CrashGroup): Promise<ReadCrashGroup> {
    return { ...group, topFunctions: await this.symbols.name(group.latest.firmwareVersion, group.latest.hardwareId, group.topFrames) };
  }

  private named(crashes: StoredCrash[]): Promise<ReadCrash[]> {
    return Promise.all(
      crashes.map(async (crash) => {
        const backtrace = crash.panic?.backtrace ?? [];
        const names = await this.symbols.name(crash.firmwareVersion, crash.hardwareId, backtrace);
        return { ...crash, frames: backtrace.map((address, index) => ({ address, function: names[index] })) };
      }),
    );
  }
}
