import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Mirror } from '../../../shared/database/mirror.js';
import type { Device } from '../domain/device.js';
import { DeviceRepository } from '../domain/device.repository.js';

/**
 * Devices as the device-facing hot paths read them (token check, config and OTA polls): from
 * memory, forgotten on every change of the columns they use (ChangeFeed). Read-only: code that
 * changes a device loads it with DeviceRepository.updateLocked.
 */
@Injectable()
export class DeviceSnapshots {
  private readonly mirror: Mirror<Device | null>;

  constructor(devices: DeviceRepository, feed: ChangeFeed) {
    this.mirror = new Mirror(feed, 'device', (deviceId) => devices.findById(deviceId));
  }

  get(deviceId: string): Promise<Device | null> {
    return this.mirror.get(deviceId);
  }
}
