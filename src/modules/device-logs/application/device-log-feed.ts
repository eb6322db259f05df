import { Injectable } from '@nestjs/common';
import { InProcessFeed } from '../../../shared/in-process-feed.js';
import type { LogLine } from '../domain/device-log.js';

/** What one upload stored for one device: the lines actually inserted (no duplicates), after the commit. */
export interface StoredLogLines {
  deviceId: string;
  /** The device's owner when they were stored; null when unclaimed. */
  ownerId: string | null;
  lines: LogLine[];
}

/** Tells this instance's listeners (the live stream) what each upload stored, once it committed. */
@Injectable()
export class DeviceLogFeed extends InProcessFeed<StoredLogLines> {
  constructor() {
    super('stored-log');
  }

  publish(stored: StoredLogLines): void {
    if (stored.lines.length > 0) this.notify(stored);
  }
}
