import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { EventLog } from '../../events/index.js';
import { FirmwareSymbols } from '../../ota/index.js';
import { DeviceAccess, type DeviceViewer } from '../../sharing/index.js';
import { CrashStore, type CrashPage } from '../domain/crash.store.js';
import { isCrash, type CrashGroup, type CrashReport, type NamedFrame, type StoredCrash } from '../domain/crash-report.js';

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
    private readonly events: EventLog,
  ) {}

  /**
   * Stores a report once per crash id. A new one with a crash reset reason is the event
   * `device.crashed` (at the time it arrived: a gateway's clock may not be set yet after a crash),
   * in the same transaction; a reboot for another reason (power on, brownout, …) is stored only.
   */
  report(deviceId: string, report: CrashReport): Promise<{ groupId: string; created: boolean }> {
    const receivedAt = this.clock.now();
    return this.store.store(deviceId, report, receivedAt, async (tx, { groupId, ownerId }) => {
      if (!isCrash(report.resetReason)) return;
      await this.events.record(tx, {
        type: 'device.crashed',
        deviceId,
        ownerId,
        occurredAt: receivedAt,
        data: { crashId: report.crashId, ts: report.ts.toISOString(), resetReason: report.resetReason, firmwareVersion: report.firmwareVersion, uptimeSec: report.uptimeSec, groupId },
      });
    });
  }

  /** How many crashes (not other reboots) of the device arrived after `since`. */
  crashesReceivedAfter(deviceId: string, since: Date): Promise<number> {
    return this.store.crashesReceivedAfter(deviceId, since);
  }

  async ofDevice(viewer: DeviceViewer, deviceId: string, page: Omit<CrashPage, 'since'>): Promise<ReadCrash[]> {
    const grant = await this.access.toSee(viewer, deviceId);
    return this.named(await this.store.ofDevice(deviceId, { ...page, since: grant.role === 'admin' ? null : grant.visibleSince }));
  }

  async groups(offset: number, limit: number): Promise<ReadCrashGroup[]> {
    return this.namedGroups(await this.store.groups(offset, limit));
  }

  async group(groupId: string): Promise<{ group: ReadCrashGroup; samples: ReadCrash[] }> {
    const group = /^[0-9a-f]{16}$/.test(groupId) ? await this.store.group(groupId) : null;
    if (!group) throw new NotFoundError('No crash group has this id.');
    const [named] = await this.namedGroups([group]);
    return { group: named, samples: await this.named(await this.store.samples(groupId, SAMPLES_PER_GROUP)) };
  }

  private async namedGroups(groups: CrashGroup[]): Promise<ReadCrashGroup[]> {
    const names = await this.symbols.name(groups.map((group) => ({ version: group.latest.firmwareVersion, hardwareId: group.latest.hardwareId, addresses: group.topFrames })));
    return groups.map((group, index) => ({ ...group, topFunctions: names[index] }));
  }

  private async named(crashes: StoredCrash[]): Promise<ReadCrash[]> {
    const backtraces = crashes.map((crash) => crash.panic?.backtrace ?? []);
    const names = await this.symbols.name(crashes.map((crash, index) => ({ version: crash.firmwareVersion, hardwareId: crash.hardwareId, addresses: backtraces[index] })));
    return crashes.map((crash, index) => ({ ...crash, frames: backtraces[index].map((address, frame) => ({ address, function: names[index][frame] })) }));
  }
}
