import { Injectable, Logger } from '@nestjs/common';
import type { LogLine } from '../domain/device-log.js';

/** What one upload stored for one device: the lines actually inserted (no duplicates), after the commit. */
export interface StoredLogLines {
  deviceId: string;
  /** The device's owner when they were stored; null when unclaimed. */
  ownerId: string | null;
  lines: LogLine[];
}

export type StoredLogListener = (stored: StoredLogLines) => void;

/**
 * Tells this instance's listeners (the live stream) what each upload stored, once it committed.
 * Listeners run synchronously and must only hand the work on: the upload is answered right after.
 */
@Injectable()
export class DeviceLogFeed {
  private readonly logger = new Logger(DeviceLogFeed.name);
  private readonly listeners = new Set<StoredLogListener>();

  subscribe(listener: StoredLogListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(stored: StoredLogLines): void {
    if (stored.lines.length === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(stored);
      } catch (error) {
        this.logger.error({ err: error }, 'A stored-log listener failed');
      }
    }
  }
}
