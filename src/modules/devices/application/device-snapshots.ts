import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Mirror } from '../../../shared/database/mirror.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';
import { DeviceSnapshotQueries, type DeviceSnapshot } from '../domain/device-snapshot.queries.js';

/**
 * Devices as the device-facing hot paths read them (token check, config and OTA polls): from
 * memory, forgotten on every change of the columns they hold (ChangeFeed). Read-only: code that
 * changes a device loads it with DeviceRepository.updateLocked.
 */
@Injectable()
export class DeviceSnapshots {
  private readonly mirror: Mirror<DeviceSnapshot | null>;

  constructor(source: DeviceSnapshotQueries, feed: ChangeFeed, caches: MemoryCaches) {
    this.mirror = new Mirror(feed, 'device', (deviceId) => source.load(deviceId), caches.perDevice('device_snapshots'));
  }

  get(deviceId: string): Promise<DeviceSnapshot | null> {
    return this.mirror.get(deviceId);
  }
}
