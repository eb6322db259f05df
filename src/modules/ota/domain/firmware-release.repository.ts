import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { OtaChannel } from '../../../shared/kernel/ota-channel.js';
import type { CrashFreeCounts, FirmwareRelease } from './firmware-release.js';

export interface ReleaseFilter {
  channel?: OtaChannel;
  hardwareId?: string;
  version?: string;
  includeRevoked: boolean;
  limit: number;
  after?: { publishedAt: Date; id: string };
}

/** Where the devices stand with one release. */
export interface ReleaseCounts {
  offered: number;
  downloading: number;
  installing: number;
  installed: number;
  failed: number;
  rolledBack: number;
  stalled: number;
  /** Held back for their batteries at their latest poll, and not updating yet. */
  heldBack: number;
}

/** Port for firmware releases as administrators publish and steer them. The abstract class doubles as the injection token. */
/** A device the rollout of a release reached (offered, or reporting about it), and its owner. */
export interface RolloutDevice {
  deviceId: string;
  ownerId: string | null;
}

export abstract class FirmwareReleaseRepository {
  /** False when (version, hardwareId, channel) exists already; one conditional INSERT, so two publishers cannot both win. */
  /** False when a release with the same identity exists; `onInserted` runs in the insert's transaction. */
  abstract insert(release: FirmwareRelease, onInserted?: (tx: SqlRunner) => Promise<void>): Promise<boolean>;
  abstract findById(id: string): Promise<FirmwareRelease | null>;
  /** Newest first, keyset-paginated on (publishedAt, id). */
  abstract list(filter: ReleaseFilter): Promise<FirmwareRelease[]>;
  /**
   * Applies the change under a row lock; null when the release does not exist. Ending an automatic
   * pause (autoPausedAt back to null) starts the failure budget afresh at the change's updatedAt.
   */
  abstract update(id: string, change: (release: FirmwareRelease) => FirmwareRelease, onUpdated?: (tx: SqlRunner, release: FirmwareRelease) => Promise<void>): Promise<FirmwareRelease | null>;
  /**
   * Pauses the release because of failures, unless it is paused already; true when this call
   * paused it. `onPaused` runs in the same transaction with the devices the rollout reached.
   */
  abstract autoPause(id: string, now: Date, onPaused?: (tx: SqlRunner, devices: RolloutDevice[]) => Promise<void>): Promise<boolean>;
  /**
   * Where the devices stand with the release. A device that installed it but now runs an older
   * version counts as rolled back; one that started a download or install and was silent since
   * `stalledBefore` counts as stalled. `onlySinceBudgetStart`: only devices whose last event came
   * after the failure budget (re)started.
   */
  abstract counts(id: string, stalledBefore: Date, onlySinceBudgetStart?: boolean): Promise<ReleaseCounts>;
  /**
   * The devices of the release's rollout that confirmed booting its version, and how many of them
   * reported a crash of it within a day of that (gateway time). `onlySinceBudgetStart`: only
   * confirmations received after the budget (re)started, as for counts.
   */
  abstract crashFree(release: FirmwareRelease, onlySinceBudgetStart?: boolean): Promise<CrashFreeCounts>;
  /** Devices that were offered release `id` and now run `backVersion`: those a rollback took back. */
  abstract wentBack(id: string, backVersion: string): Promise<number>;
  /** Releases that may pause themselves: live, with a failure budget or a crash-free target. */
  abstract watchedReleases(): Promise<FirmwareRelease[]>;
  /** Releases an event's toVersion may refer to: that version (numerically), for this hardware or any. */
  abstract forVersions(versions: string[], hardwareId: string): Promise<FirmwareRelease[]>;
}
