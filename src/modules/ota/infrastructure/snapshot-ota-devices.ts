import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { DeviceConfigService, DeviceSnapshots } from '../../devices/index.js';
import type { OtaTarget } from '../domain/firmware-release.js';
import { OtaDevices } from '../domain/ota-devices.js';

/** OtaDevices over the devices module: its in-memory snapshots and effective configuration, so a poll costs no query. */
@Injectable()
export class SnapshotOtaDevices extends OtaDevices {
  constructor(
    private readonly snapshots: DeviceSnapshots,
    private readonly configs: DeviceConfigService,
    private readonly feed: ChangeFeed,
  ) {
    super();
  }

  async target(deviceId: string): Promise<OtaTarget | null> {
    const device = await this.snapshots.get(deviceId);
    if (!device) return null;
    const config = await this.configs.of(device);
    return {
      deviceId,
      hardwareId: device.hardwareId,
      firmwareVersion: device.firmwareVersion,
      channel: config.otaChannel,
      minSoc: config.otaMinSoc,
      temperatureRange: config.otaTemperatureRange,
      tags: device.tags,
    };
  }

  /** The trigger announces it to every instance at commit; this instance forgets at once. */
  firmwareChanged(deviceId: string): void {
    this.feed.changed('device', deviceId);
  }
}
