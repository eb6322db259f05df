import { Injectable } from '@nestjs/common';
import { EventLog } from '../../events/index.js';
import { DeviceReturns } from '../../telemetry/index.js';
import { DeviceRepository } from '../domain/device.repository.js';

/**
 * device.online: telemetry of a device the offline check marked offline was stored (the ingest
 * flush tells this once its records committed). The mark is cleared and the event recorded with
 * its dispatch job, in one transaction; of several flushes for one device only the first finds it
 * still marked, so there is one event per return.
 */
@Injectable()
export class OnlineTransitions extends DeviceReturns {
  constructor(
    private readonly devices: DeviceRepository,
    private readonly events: EventLog,
  ) {
    super();
  }

  async backOnline(deviceIds: string[], at: Date): Promise<void> {
    await this.devices.markBackOnline(deviceIds, async (tx, returned) => {
      for (const device of returned) {
        await this.events.record(tx, { type: 'device.online', deviceId: device.deviceId, ownerId: device.ownerId, occurredAt: at, data: { offlineSince: device.offlineSince.toISOString() } });
      }
    });
  }
}
