import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { ReleaseState } from './firmware-release.js';
import type { OtaEvent, OtaEventType } from './ota-event.js';

export interface StoredOtaEvent extends OtaEvent {
  id: string;
  receivedAt: Date;
}

/** One device's move with one release, from the latest event about it in a batch. */
export interface ReleaseStateChange {
  releaseId: string;
  state: ReleaseState;
  eventTs: Date;
}

export interface HistoryFilter {
  deviceId: string;
  from: Date | null;
  to: Date | null;
  types: OtaEventType[] | null;
  limit: number;
  before: { ts: Date; id: string } | null;
}

/** What one batch of a device may do, inside its transaction, while it holds the device. */
export interface OtaEventBatch {
  /** When the running firmware was last reported (by registration or an earlier batch); null: never by an event. */
  readonly firmwareReportedAt: Date | null;
  /** The device's owner, read under the batch's lock. */
  readonly ownerId: string | null;
  /** The batch's transaction, for what reports its outcome (the event log) to commit with it. */
  readonly tx: SqlRunner;
  /** Stored download_progress times per toVersion within [from, to], for coalescing. */
  storedProgress(toVersions: string[], from: Date, to: Date): Promise<Map<string, Date[]>>;
  /** Stores the events idempotently on (device, ts, type); returns those that were new. */
  insert(events: OtaEvent[], receivedAt: Date): Promise<OtaEvent[]>;
  /** Later events win: a retried or late batch never moves a device back. */
  applyStates(changes: ReleaseStateChange[], receivedAt: Date): Promise<void>;
  /** The firmware the device runs, as of the event at `reportedAt`. */
  setFirmwareVersion(version: string, reportedAt: Date): Promise<void>;
  /** last_seen_at moves forward only (the devices table's one rule). */
  touchLastSeen(now: Date): Promise<void>;
}

/** Port for OTA runtime events and the per-release state they drive. The abstract class doubles as the injection token. */
export abstract class OtaEventStore {
  /**
   * Runs `work` in one transaction that holds the device (one batch of a device at a time) and
   * commits when it returns; null without running it when the device no longer exists.
   */
  abstract inBatch<T>(deviceId: string, work: (batch: OtaEventBatch) => Promise<T>): Promise<T | null>;
  /** Newest first on (ts, id): new events never shift a page that was already read. */
  abstract history(filter: HistoryFilter): Promise<StoredOtaEvent[]>;
}
